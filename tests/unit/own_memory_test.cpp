#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "plugin/cgroupfs/own_memory.h"

namespace memcg::cgroupfs {
namespace {

namespace fs = std::filesystem;

// A systemd host: the unified hierarchy at /sys/fs/cgroup, shown whole.
const std::vector<Cgroup2Mount> kHost = {{"/", "/sys/fs/cgroup"}};

TEST(OwnCgroup, ASystemdServiceUnderTheHostMount) {
  const auto c = own_cgroup_dir("0::/system.slice/memcg-exporter.service\n", kHost);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->dir, "/sys/fs/cgroup/system.slice/memcg-exporter.service");
  EXPECT_EQ(c->mountpoint, "/sys/fs/cgroup");
}

// A container in its own cgroup namespace: /proc/self/cgroup says "/", the
// runtime's /sys/fs/cgroup shows that same cgroup, and the host's tree
// bind-mounted for collection shows a root outside the namespace.
TEST(OwnCgroup, AContainerIsItsNamespaceRootNotTheHostTreeMountedForCollection) {
  const std::vector<Cgroup2Mount> mounts = {{"/../../..", "/host/cgroup"}, {"/", "/sys/fs/cgroup"}};
  const auto c = own_cgroup_dir("0::/\n", mounts);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->dir, "/sys/fs/cgroup");
  EXPECT_FALSE(own_cgroup_dir("0::/\n", {{"/../../..", "/host/cgroup"}})) << "only a mount outside the namespace";
}

TEST(OwnCgroup, AMountOfASubtreeAndPathsItDoesNotHold) {
  const std::vector<Cgroup2Mount> sub = {{"/kubepods.slice", "/mnt/pods"}};
  const auto c = own_cgroup_dir("0::/kubepods.slice/pod1.slice/cri-containerd-1.scope\n", sub);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->dir, "/mnt/pods/pod1.slice/cri-containerd-1.scope");
  EXPECT_FALSE(own_cgroup_dir("0::/kubepods.slicex/a\n", sub)) << "a sibling whose name starts the same";
  EXPECT_FALSE(own_cgroup_dir("0::/system.slice/x.service\n", sub));
  EXPECT_FALSE(own_cgroup_dir("0::/../outside\n", kHost)) << "a cgroup outside the namespace";
  EXPECT_FALSE(own_cgroup_dir("0::/a/../../b\n", kHost)) << "a \"..\" further down";
  // ".." only as a whole component: a cgroup whose name starts with two dots is an ordinary one.
  const auto dots = own_cgroup_dir("0::/system.slice/..hidden.service\n", kHost);
  ASSERT_TRUE(dots);
  EXPECT_EQ(dots->dir, "/sys/fs/cgroup/system.slice/..hidden.service");
  EXPECT_FALSE(own_cgroup_dir("12:memory:/x\n1:name=systemd:/x\n", kHost)) << "cgroup v1 only";
  EXPECT_FALSE(own_cgroup_dir("", kHost));
  // Hybrid hosts list v1 hierarchies first; the "0::" line is the one.
  const auto hybrid = own_cgroup_dir("12:memory:/a\n0::/system.slice/x.service\n", kHost);
  ASSERT_TRUE(hybrid);
  EXPECT_EQ(hybrid->dir, "/sys/fs/cgroup/system.slice/x.service");
}

TEST(OwnCgroup, MountsFromMountinfoWithTheirRoots) {
  const auto m = cgroup2_mounts_in_mountinfo(
      "22 28 0:21 / /sys rw - sysfs sysfs rw\n"
      "30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
      "41 30 0:26 /../../.. /host/my\\040cgroup ro master:4 - cgroup2 cgroup2 rw\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].root, "/");
  EXPECT_EQ(m[0].mountpoint, "/sys/fs/cgroup");
  EXPECT_EQ(m[1].root, "/../../..");
  EXPECT_EQ(m[1].mountpoint, "/host/my cgroup");
}

class LowestLimit : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/memcg-own-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    top = tmpl;
    fs::create_directories(top + "/system.slice/x.service");
  }
  void TearDown() override { fs::remove_all(top); }
  void put(const std::string& rel, const std::string& text) { std::ofstream(top + rel) << text; }
  OwnCgroup own() const { return {top + "/system.slice/x.service", top}; }
  std::string top;
};

TEST_F(LowestLimit, TheLowestOfMaxAndHighUpToTheMount) {
  EXPECT_FALSE(lowest_memory_limit(own()).value()) << "no files: no limit (the host root has none)";
  put("/system.slice/x.service/memory.max", "max\n");
  put("/system.slice/x.service/memory.high", "max\n");
  EXPECT_FALSE(lowest_memory_limit(own()).value()) << "\"max\" is no limit";
  put("/system.slice/memory.max", "1073741824\n");
  auto l = lowest_memory_limit(own());
  ASSERT_TRUE(l.ok() && l.value());
  EXPECT_EQ(l.value()->bytes, 1073741824u) << "a slice's limit holds its services";
  EXPECT_EQ(l.value()->file, top + "/system.slice/memory.max");
  put("/system.slice/x.service/memory.high", "41943040\n");
  l = lowest_memory_limit(own());
  ASSERT_TRUE(l.ok() && l.value());
  EXPECT_EQ(l.value()->bytes, 41943040u);
  EXPECT_EQ(l.value()->file, top + "/system.slice/x.service/memory.high");
  // The mount point itself counts: a container's namespace root is its own cgroup.
  put("/memory.max", "33554432\n");
  EXPECT_EQ(lowest_memory_limit(own()).value()->bytes, 33554432u);
  // Nothing above the mount point is read.
  EXPECT_EQ(lowest_memory_limit({top + "/system.slice/x.service", top + "/system.slice"}).value()->bytes, 41943040u);
}

TEST_F(LowestLimit, AnUnreadableOrMalformedFileIsAnErrorWithItsPath) {
  put("/system.slice/memory.max", "lots\n");
  auto l = lowest_memory_limit(own());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.err(), EINVAL);
  EXPECT_EQ(l.path(), top + "/system.slice/memory.max");
  fs::remove(top + "/system.slice/memory.max");
  fs::create_directory(top + "/system.slice/memory.max");  // read(2) on a directory: EISDIR
  l = lowest_memory_limit(own());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.err(), EISDIR);
  EXPECT_NE(l.message().find("system.slice/memory.max: Is a directory"), std::string::npos) << l.message();
}

TEST_F(LowestLimit, ThisProcessFromItsProcFiles) {
  put("/system.slice/x.service/memory.max", "268435456\n");
  put("/cgroup", "0::/system.slice/x.service\n");
  put("/mountinfo", "30 22 0:26 / " + top + " rw - cgroup2 cgroup2 rw\n");
  const auto l = own_memory_limit(top + "/cgroup", top + "/mountinfo");
  ASSERT_TRUE(l.ok() && l.value()) << l.message();
  EXPECT_EQ(l.value()->bytes, 268435456u);
  EXPECT_EQ(own_memory_limit(top + "/nope", top + "/mountinfo").err(), ENOENT);
  put("/mountinfo", "22 28 0:21 / /sys rw - sysfs sysfs rw\n");
  // Unknown, not "no limit": the daemon says so instead of running unsized in silence.
  const auto hidden = own_memory_limit(top + "/cgroup", top + "/mountinfo");
  EXPECT_EQ(hidden.err(), ENOENT) << "no cgroup2 mount shows it";
  EXPECT_NE(hidden.message().find("no cgroup2 mount in " + top + "/mountinfo shows the cgroup in " + top + "/cgroup"),
            std::string::npos)
      << hidden.message();
}

TEST(MemoryFdBudget, TheReserveFirstThenEightKiBADescriptor) {
  EXPECT_EQ(memory_fd_budget(0), 0u);
  EXPECT_EQ(memory_fd_budget(kBaseMemoryReserve), 0u);
  EXPECT_EQ(memory_fd_budget(kBaseMemoryReserve + kMemoryPerFd), 1u);
  // The DaemonSet's 256Mi: ~29,700 descriptors, ~3,300 cgroups at nine each.
  EXPECT_EQ(memory_fd_budget(256u << 20), ((256u - 24u) << 20) / (8u << 10));
}

}  // namespace
}  // namespace memcg::cgroupfs
