// The quiet probe (CgroupReader::probe_quiet): a cgroup whose usage files
// read byte for byte as at the last probe, with nothing flagged, is not
// parsed again. What it concludes must be what the full probe concludes:
// two collectors over one tree, one with its memory.events polled (so that
// its probes may be quiet, as on a real kernel) and one reading them every
// pass (never quiet), see the same values pass after pass while some
// cgroups move and others stay still.
#include <gtest/gtest.h>

#include "config/config.h"
#include "plugin/collector.h"
#include "tests/fixtures/fake_poller.h"
#include "tests/fixtures/same_views.h"
#include "tests/fixtures/tree.h"

namespace memcg {
namespace {

using namespace std::chrono_literals;

class QuietProbeTest : public ::testing::Test {
 protected:
  QuietProbeTest() {
    fixtures::CgroupSpec s;
    s.current = 8 << 20;
    s.swap = 0;
    s.stat.set("anon", 8 << 20);
    tree.add("pods", s);
    for (int i = 0; i < 4; ++i) tree.add("pods/c" + std::to_string(i), s);
    s.swap = 1 << 20;
    tree.add("pods/c4", s);  // swap in use: read every pass, compared too
    cfg = config::Config::builtin({4096, 1});
    cfg.collector.rescan_interval = 1h;
    cfg.resolve();
    polled = std::make_unique<Collector>(tree.root(), cfg, clock);
    auto p = std::make_unique<fixtures::FakePoller>();
    poller = p.get();
    polled->set_event_poller(std::move(p));
    every_pass = std::make_unique<Collector>(tree.root(), cfg, clock);
  }
  void both_pass() {
    clock.advance(1s);
    polled->run_pass();
    every_pass->run_pass();
  }
  // Every value a probe feeds, cgroup by cgroup, equal in both.
  void expect_same() { fixtures::expect_same_views(*polled->latest(), *every_pass->latest()); }

  fixtures::Tree tree;
  config::Config cfg;
  ManualClock clock;
  fixtures::FakePoller* poller = nullptr;
  std::unique_ptr<Collector> polled, every_pass;
};

TEST_F(QuietProbeTest, AQuietProbeConcludesWhatTheFullProbeDoes) {
  both_pass();
  expect_same();
  uint64_t quiet = polled->latest()->quiet_probes;
  EXPECT_EQ(quiet, 0u) << "a first probe is never quiet";
  for (int pass = 1; pass <= 80; ++pass) {
    // c0 grows every pass, c1 every third, c2 shrinks and comes back, c3
    // never moves; c4's swap moves every fifth; the root stays.
    tree.set_current("pods/c0", (8u << 20) + static_cast<uint64_t>(pass) * 4096);
    if (pass % 3 == 0) tree.set_current("pods/c1", (8u << 20) + static_cast<uint64_t>(pass) * 65536);
    if (pass % 7 == 0) tree.set_current("pods/c2", 4 << 20);
    if (pass % 7 == 1) tree.set_current("pods/c2", 8 << 20);
    if (pass % 5 == 0) tree.set_swap("pods/c4", (1u << 20) + static_cast<uint64_t>(pass) * 4096);
    both_pass();
    expect_same();
    if (HasFailure()) return;
  }
  quiet = polled->latest()->quiet_probes;
  EXPECT_GT(quiet, 80u * 2) << "the still cgroups' probes took the quiet path";
  EXPECT_EQ(every_pass->latest()->quiet_probes, 0u) << "memory.events read every pass: never quiet";
}

TEST_F(QuietProbeTest, AFlaggedEventFileEndsTheQuiet) {
  both_pass();
  both_pass();
  const uint64_t before = polled->latest()->quiet_probes;
  EXPECT_GT(before, 0u);
  tree.set_event("pods/c3", "oom_kill", 1, true);
  ASSERT_TRUE(poller->flag(tree.dir("pods/c3") + "/memory.events"));
  both_pass();
  expect_same();
  const CgroupView* c3 = nullptr;
  for (const auto& v : polled->latest()->cgroups)
    if (v.id->path == "pods/c3") c3 = &v;
  ASSERT_NE(c3, nullptr);
  ASSERT_TRUE(c3->probe.events);
  EXPECT_EQ(c3->probe.events->events.get(parse::ev_oom_kill), std::optional<uint64_t>(1));
  EXPECT_EQ(c3->reads[static_cast<size_t>(cache::ReadReason::event)], 1u) << "the kill read memory.stat";
}

}  // namespace
}  // namespace memcg
