// Reads the host's own cgroup v2 tree when it has a memory controller; skips
// (with the reason) on hosts where memory is bound to cgroup v1.
#include <gtest/gtest.h>

#include "config/config.h"
#include "plugin/cgroupfs/mount.h"
#include "plugin/collector.h"

namespace memcg {
namespace {

TEST(Host, ReadsTheRealCgroup2TreeWhenItHasMemory) {
  auto root = cgroupfs::find_cgroup2_mount();
  if (!root) GTEST_SKIP() << "no cgroup2 mount on this host";
  if (!cgroupfs::is_cgroup2(*root).value()) GTEST_SKIP() << *root << " is not cgroup2";
  if (!cgroupfs::has_memory_controller(*root)) GTEST_SKIP() << "no cgroup v2 memory controller at " << *root;

  auto cfg = config::Config::builtin(config::HostFacts::probe());
  cfg.collector.max_depth = 2;
  Collector c(*root, cfg);
  auto report = c.run_pass();
  auto snap = c.latest();
  ASSERT_GT(snap->cgroups.size(), 0u);
  EXPECT_EQ(report.reads, snap->cgroups.size()) << "every cgroup is read once at first sight";
  for (const auto& cg : snap->cgroups) {
    ASSERT_TRUE(cg.stat) << cg.id->path;
    if (cg.id->path != "/") {
      EXPECT_TRUE(cg.probe.current.has_value()) << cg.id->path;
    }
  }
}

}  // namespace
}  // namespace memcg
