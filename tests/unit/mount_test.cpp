#include <gtest/gtest.h>

#include "plugin/cgroupfs/mount.h"
#include "tests/fixtures/tree.h"

namespace memcg::cgroupfs {
namespace {

TEST(Mountinfo, FindsCgroup2AmongOthers) {
  const char* text =
      "22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
      "26 22 0:23 / /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory\n"
      "27 22 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n";
  EXPECT_EQ(find_cgroup2_in_mountinfo(text), "/sys/fs/cgroup/unified");
}

TEST(Mountinfo, DecodesOctalEscapesAndHandlesNoOptionalFields) {
  EXPECT_EQ(find_cgroup2_in_mountinfo("30 1 0:26 / /mnt/my\\040cgroups rw - cgroup2 none rw\n"), "/mnt/my cgroups");
  EXPECT_EQ(find_cgroup2_in_mountinfo("22 28 0:21 / /sys rw - sysfs sysfs rw\n"), std::nullopt);
  EXPECT_EQ(find_cgroup2_in_mountinfo("garbage\n\n - cgroup2\n"), std::nullopt);
}

TEST(MemoryController, FixtureRootDeclaresIt) {
  fixtures::Tree tree;
  EXPECT_TRUE(has_memory_controller(tree.root()));
  tree.write("/", "cgroup.controllers", "cpu io pids\n");
  EXPECT_FALSE(has_memory_controller(tree.root()));
  EXPECT_FALSE(has_memory_controller("/nonexistent"));
  const auto v2 = is_cgroup2(tree.root());
  EXPECT_TRUE(v2.ok());
  EXPECT_FALSE(v2.value()) << "a temp dir is not cgroup2";
  const auto missing = is_cgroup2(tree.root() + "/nope");
  EXPECT_EQ(missing.err(), ENOENT);
  EXPECT_NE(missing.message().find("/nope: No such file"), std::string::npos) << missing.message();
}

}  // namespace
}  // namespace memcg::cgroupfs
