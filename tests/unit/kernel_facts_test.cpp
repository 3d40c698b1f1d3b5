// What the kernel adds to a value's staleness and which newer features it
// has, from uname-like facts and the cgroup tree (cgroupfs/kernel_facts.h).
#include "plugin/cgroupfs/kernel_facts.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/fixtures/tree.h"

namespace memcg::cgroupfs {
namespace {

TEST(KernelFacts, TheReleaseGivesTheVersion) {
  EXPECT_EQ(parse_kernel_release("6.12.117+deb13-cloud-amd64"), (KernelVersion{6, 12}));
  EXPECT_EQ(parse_kernel_release("6.1.0-57-cloud-amd64"), (KernelVersion{6, 1}));
  EXPECT_EQ(parse_kernel_release("5.15.0"), (KernelVersion{5, 15}));
  EXPECT_FALSE(parse_kernel_release(""));
  EXPECT_FALSE(parse_kernel_release("6"));
  EXPECT_FALSE(parse_kernel_release("linux-6.1"));
  EXPECT_LT(KernelVersion(6, 7), KernelVersion(6, 8));
  EXPECT_LT(KernelVersion(5, 19), KernelVersion(6, 1));
}

TEST(KernelFacts, TheFlushThresholdIs64UpdatesPerOnlineCpuInPages) {
  fixtures::Tree t;
  const auto k = probe_kernel(t.root(), "6.1.0-57-cloud-amd64", {4096, 2}, cgroupfs::RootFs::cgroup2fs);
  EXPECT_EQ(k.flush_threshold_updates(), 128u);
  EXPECT_EQ(k.flush_threshold_bytes(), 512u * 1024);  // "auto" thresholds are the same number
  EXPECT_EQ(k.stat_lag_bytes(), 1024u * 1024);
  const auto big = probe_kernel(t.root(), "6.12.0", {16384, 96}, cgroupfs::RootFs::cgroup2fs);
  EXPECT_EQ(big.flush_threshold_bytes(), 64u * 96 * 16384);
}

TEST(KernelFacts, SixEightAndLaterFlushPerCgroupSubtree) {
  fixtures::Tree t;
  EXPECT_FALSE(probe_kernel(t.root(), "6.1.0", {4096, 2}, cgroupfs::RootFs::cgroup2fs).has("stat_flush_per_cgroup"));
  EXPECT_FALSE(probe_kernel(t.root(), "6.7.12", {4096, 2}, cgroupfs::RootFs::cgroup2fs).has("stat_flush_per_cgroup"));
  EXPECT_TRUE(probe_kernel(t.root(), "6.8.0", {4096, 2}, cgroupfs::RootFs::cgroup2fs).has("stat_flush_per_cgroup"));
  EXPECT_TRUE(probe_kernel(t.root(), "6.12.117+deb13-cloud-amd64", {4096, 2}, cgroupfs::RootFs::cgroup2fs).has("stat_flush_per_cgroup"));
  EXPECT_FALSE(probe_kernel(t.root(), "garbage", {4096, 2}, cgroupfs::RootFs::cgroup2fs).has("stat_flush_per_cgroup"));
}

TEST(KernelFacts, NewerMemoryStatKeysAndFilesAreFeatures) {
  fixtures::Tree t;
  t.add("a");
  auto k = probe_kernel(t.root(), "6.1.0", {4096, 2}, cgroupfs::RootFs::cgroup2fs);
  EXPECT_FALSE(k.has("memory_stat_zswap"));  // the 6.1 fixture's root memory.stat
  EXPECT_FALSE(k.has("memory_stat_hugetlb"));
  EXPECT_TRUE(k.has("psi"));
  // memory.peak: read-only before 6.12, writable (reset per open file) since.
  ASSERT_EQ(::chmod((t.dir("a") + "/memory.peak").c_str(), 0444), 0);
  EXPECT_FALSE(probe_kernel(t.root(), "6.1.0", {4096, 2}, cgroupfs::RootFs::cgroup2fs).has("memory_peak_fd_reset"));
  ASSERT_EQ(::chmod((t.dir("a") + "/memory.peak").c_str(), 0644), 0);
  t.write("/", "memory.stat", "anon 1\nzswap 0\nzswapped 0\nhugetlb 0\n");
  k = probe_kernel(t.root(), "6.12.0", {4096, 2}, cgroupfs::RootFs::cgroup2fs);
  EXPECT_TRUE(k.has("memory_peak_fd_reset"));
  EXPECT_TRUE(k.has("memory_stat_zswap"));
  EXPECT_TRUE(k.has("memory_stat_hugetlb"));
  t.remove_file("a", "memory.pressure");
  EXPECT_FALSE(probe_kernel(t.root(), "6.12.0", {4096, 2}, cgroupfs::RootFs::cgroup2fs).has("psi"));
}

// A tree in a temporary directory is not cgroupfs: a write to its
// memory.peak would replace the file, so the reset is off there whatever
// the kernel, and the status page's note says why.
TEST(KernelFacts, NoWritesWhereTheRootIsNotCgroup2fs) {
  fixtures::Tree t;
  t.add("a");
  EXPECT_EQ(root_fs(t.root()), RootFs::other);
  EXPECT_EQ(root_fs("/nonexistent/cgroup"), RootFs::other);
  const auto k = probe_kernel(t.root(), "6.12.0", {4096, 2}, RootFs::other);
  EXPECT_FALSE(k.has("memory_peak_fd_reset"));
  EXPECT_EQ(k.root_fs, RootFs::other);
  for (const auto& f : k.features)
    if (f.name == "memory_peak_fd_reset") {
      EXPECT_NE(f.note.find("not cgroup2fs"), std::string_view::npos) << f.note;
    }
  EXPECT_TRUE(probe_kernel(t.root(), "6.12.0", {4096, 2}, RootFs::cgroup2fs).has("memory_peak_fd_reset"));
}

TEST(KernelFacts, AnUnreadableTreeHasNoFeaturesAndStillAThreshold) {
  const auto k = probe_kernel("/nonexistent/cgroup", "6.12.0", {4096, 4}, cgroupfs::RootFs::cgroup2fs);
  EXPECT_FALSE(k.has("memory_stat_zswap"));
  EXPECT_FALSE(k.has("psi"));
  EXPECT_FALSE(k.has("memory_peak_fd_reset"));
  EXPECT_EQ(k.flush_threshold_bytes(), 64u * 4 * 4096);
}

}  // namespace
}  // namespace memcg::cgroupfs
