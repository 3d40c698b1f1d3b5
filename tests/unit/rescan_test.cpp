// Rescans that trust the root's cgroup.stat instead of walking: never when
// the count leaves room for a cgroup not collected, and a cgroup created as
// another goes is found at the next pass, not one rescan_interval later.
#include <gtest/gtest.h>

#include <filesystem>

#include "config/config.h"
#include "plugin/cgroupfs/walk_skip.h"
#include "plugin/collector.h"
#include "base/parse/cgroup_stat.h"
#include "tests/fixtures/faulty_io.h"
#include "tests/fixtures/tree.h"

namespace memcg {
namespace {

using namespace std::chrono_literals;

TEST(CgroupStat, ReadsTheLiveDescendantCount) {
  EXPECT_EQ(parse::parse_nr_descendants("nr_descendants 212\nnr_dying_descendants 3\n"), 212u);  // 6.1
  EXPECT_EQ(parse::parse_nr_descendants("nr_descendants 7\nnr_dying_descendants 0\nnr_subsys_cpu 2\nnr_subsys_memory 7\n"
                                        "nr_dying_subsys_memory 0\n"),
            7u);  // 6.11 and later add per-controller lines
  EXPECT_EQ(parse::parse_nr_descendants("nr_dying_descendants 0\nnr_descendants 0"), 0u);
  for (const char* bad : {"", "nr_dying_descendants 3\n", "nr_descendants\n", "nr_descendants -1\n", "nr_descendants 1x\n",
                          "nr_descendants 99999999999999999999\n", "nr_descendants 1\nnr_descendants 2\n"})
    EXPECT_FALSE(parse::parse_nr_descendants(bad)) << bad;
}

TEST(CgroupStat, ReadsWhetherTheLastTaskExited) {
  EXPECT_EQ(parse::parse_populated("populated 1\nfrozen 0\n"), std::optional<bool>(true));
  EXPECT_EQ(parse::parse_populated("populated 0\nfrozen 0\n"), std::optional<bool>(false));
  EXPECT_EQ(parse::parse_populated("frozen 1\npopulated 0"), std::optional<bool>(false));
  for (const char* bad : {"", "frozen 0\n", "populated 2\n", "populated\n", "populated 0\npopulated 1\n"})
    EXPECT_FALSE(parse::parse_populated(bad)) << bad;
}

TEST(CgroupStat, FindsAControllerByName) {
  EXPECT_TRUE(parse::lists_controller("cpuset cpu io memory hugetlb pids rdma misc\n", "memory"));
  EXPECT_TRUE(parse::lists_controller("memory", "memory"));
  EXPECT_FALSE(parse::lists_controller("cpu io pids\n", "memory"));
  EXPECT_FALSE(parse::lists_controller("\n", "memory"));
  EXPECT_FALSE(parse::lists_controller("", "memory"));
  EXPECT_FALSE(parse::lists_controller("memoryx cpu", "memory"));
}

TEST(WalkSkip, OnlyAnExactCountOfASettledCompleteTreeSkips) {
  cgroupfs::SkipEvidence ok;
  ok.settled = true;
  ok.last_walk_complete = true;
  ok.descendants = 40;
  ok.collected_descendants = 40;
  EXPECT_TRUE(cgroupfs::may_skip_walk(ok));
  auto with = [&](auto change) {
    cgroupfs::SkipEvidence e = ok;
    change(e);
    return cgroupfs::may_skip_walk(e);
  };
  EXPECT_FALSE(with([](auto& e) { e.settled = false; }));
  EXPECT_FALSE(with([](auto& e) { e.last_walk_complete = false; }));
  EXPECT_FALSE(with([](auto& e) { e.descendants.reset(); }));
  EXPECT_FALSE(with([](auto& e) { e.descendants = 41; })) << "one more than collected: a new cgroup, or one not collected";
  EXPECT_FALSE(with([](auto& e) { e.descendants = 39; })) << "one fewer: gone without a probe noticing yet";
  EXPECT_FALSE(with([](auto& e) { e.uncollected_descendants.reset(); })) << "one without the controller not vouched for";
  EXPECT_TRUE(with([](auto& e) {
    e.descendants = 43;
    e.uncollected_descendants = 3;  // a directory without the controller and two below it
  }));
  EXPECT_TRUE(with([](auto& e) { e.skipped_in_a_row = cgroupfs::kMaxWalksSkippedInARow - 1; }));
  EXPECT_FALSE(with([](auto& e) { e.skipped_in_a_row = cgroupfs::kMaxWalksSkippedInARow; })) << "renames keep the count";
}

class RescanTest : public ::testing::Test {
 protected:
  RescanTest() {
    for (const char* p : {"a", "a/x", "b"}) tree.add(p);
    cfg = config::Config::builtin({4096, 1});
    cfg.collector.rescan_interval = 1s;  // a rescan every pass
    cfg.resolve();
  }
  void count(uint64_t n) { tree.write("/", "cgroup.stat", "nr_descendants " + std::to_string(n) + "\nnr_dying_descendants 0\n"); }
  PassReport pass(Collector& c) {
    clock.advance(1s);
    return c.run_pass();
  }
  bool has(const Collector& c, const std::string& path) {
    for (const auto& v : c.latest()->cgroups)
      if (v.id->path == path) return true;
    return false;
  }
  uint64_t walked(const Collector& c) { return c.latest()->rescans_walked; }
  uint64_t counted(const Collector& c) { return c.latest()->rescans_counted; }

  fixtures::Tree tree;
  config::Config cfg;
  ManualClock clock;
  fixtures::FaultyIo io;
};

TEST_F(RescanTest, AQuietTreeIsCountedNotWalkedButWalkedEverySixthRescan) {
  count(3);
  Collector c(tree.root(), cfg, clock, io);
  pass(c);
  EXPECT_EQ(walked(c), 1u);
  for (uint64_t i = 1; i <= cgroupfs::kMaxWalksSkippedInARow; ++i) {
    EXPECT_TRUE(pass(c).walk_skipped);
    EXPECT_EQ(counted(c), i);
  }
  EXPECT_EQ(walked(c), 1u);
  // A rename keeps the count: the walk that comes anyway finds the old name
  // gone and the new one (the walker lists the parent again at once).
  ASSERT_EQ(::rename(tree.dir("b").c_str(), tree.dir("c").c_str()), 0);
  EXPECT_FALSE(pass(c).walk_skipped);
  EXPECT_FALSE(has(c, "b"));
  EXPECT_EQ(walked(c), 2u);
  EXPECT_TRUE(has(c, "c"));
  EXPECT_EQ(c.latest()->cgroups.size(), 4u);
  EXPECT_TRUE(pass(c).walk_skipped);
}

TEST_F(RescanTest, ANewCgroupMovesTheCountAndIsFoundAtTheNextRescan) {
  count(3);
  Collector c(tree.root(), cfg, clock, io);
  pass(c);
  pass(c);
  EXPECT_EQ(counted(c), 1u);
  tree.add("a/y");
  count(4);
  auto r = pass(c);
  EXPECT_FALSE(r.walk_skipped);
  EXPECT_EQ(r.added, 1u);
  EXPECT_TRUE(has(c, "a/y"));
  EXPECT_TRUE(pass(c).walk_skipped) << "settled again";
}

TEST_F(RescanTest, ACgroupCreatedAsAnotherGoesIsFoundAtTheNextPass) {
  cfg.collector.rescan_interval = 10s;
  count(3);
  Collector c(tree.root(), cfg, clock, io);
  pass(c);
  for (int i = 0; i < 9; ++i) pass(c);  // the next pass rescans
  // b removed (kernfs answers ENODEV on its kept fds) and a/y created: the
  // count is 3 again, so the rescan trusts it; the pass's probe then sees b
  // gone, and the walk follows at the next pass instead of 10 s later.
  tree.remove("b");
  io.faults_[tree.dir("b") + "/"] = ENODEV;
  tree.add("a/y");
  auto r = pass(c);
  EXPECT_TRUE(r.walk_skipped);
  EXPECT_EQ(r.removed, 1u);
  EXPECT_FALSE(has(c, "a/y"));
  r = pass(c);
  EXPECT_FALSE(r.walk_skipped);
  EXPECT_EQ(r.added, 1u);
  EXPECT_TRUE(has(c, "a/y"));
}

TEST_F(RescanTest, WhatTheCountCannotVouchForIsWalked) {
  Collector c(tree.root(), cfg, clock, io);
  pass(c);
  pass(c);
  EXPECT_EQ(counted(c), 0u) << "no cgroup.stat: every rescan walks";
  count(3);
  pass(c);  // the walk opens the count
  EXPECT_TRUE(pass(c).walk_skipped);
  tree.write("/", "cgroup.stat", "nr_descendants three\n");
  EXPECT_FALSE(pass(c).walk_skipped) << "malformed";
  // A directory without the memory controller is a descendant not
  // collected: it may gain the controller without the count moving.
  tree.add_plain_dir("init.scope");
  count(4);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(pass(c).walk_skipped);
  tree.add("init.scope");  // the controller enabled there
  EXPECT_FALSE(pass(c).walk_skipped);
  EXPECT_TRUE(has(c, "init.scope"));
  EXPECT_TRUE(pass(c).walk_skipped);
  // New rules: the next rescan walks whatever the count says.
  cfg.collector.exclude = {*config::Glob::compile("init.scope", nullptr)};
  cfg.resolve();
  c.set_config(cfg);
  EXPECT_FALSE(pass(c).walk_skipped);
  EXPECT_FALSE(has(c, "init.scope"));
  EXPECT_FALSE(pass(c).walk_skipped) << "an excluded cgroup is not collected: walked";
}

TEST_F(RescanTest, ADirectoryWithoutTheControllerIsVouchedForByItsOwnFiles) {
  // What systemd 251+ makes of udev's workers: system.slice/systemd-udevd.service/udev
  // has no memory controller, and its own cgroup.stat and cgroup.controllers.
  tree.add_plain_dir("b/udev");
  tree.write("b/udev", "cgroup.stat", "nr_descendants 1\nnr_dying_descendants 0\n");
  tree.write("b/udev", "cgroup.controllers", "cpu pids\n");
  count(5);  // a, a/x, b, b/udev and one below udev the walk never enters
  Collector c(tree.root(), cfg, clock, io);
  pass(c);
  EXPECT_TRUE(pass(c).walk_skipped) << "collected 3 + udev and its one";
  // Its subtree grows: its own count says so, and the root's.
  tree.write("b/udev", "cgroup.stat", "nr_descendants 2\nnr_dying_descendants 0\n");
  count(6);
  EXPECT_TRUE(pass(c).walk_skipped);
  // Back to none below it; then it goes (kernfs: ENODEV on its kept
  // cgroup.stat) as another cgroup comes: the root's count holds, the
  // vouching does not.
  tree.write("b/udev", "cgroup.stat", "nr_descendants 0\nnr_dying_descendants 0\n");
  count(4);
  EXPECT_TRUE(pass(c).walk_skipped);
  io.faults_[tree.dir("b/udev") + "/"] = ENODEV;
  tree.add("c");
  auto r = pass(c);
  EXPECT_FALSE(r.walk_skipped);
  EXPECT_TRUE(has(c, "c"));
  io.faults_.clear();
  count(5);  // a, a/x, b, c and udev (still there in the fixture)
  EXPECT_TRUE(pass(c).walk_skipped) << "udev's files reopened by the walk";
  // The memory controller arrives there: its cgroup.controllers says so.
  tree.write("b/udev", "cgroup.controllers", "cpu memory pids\n");
  tree.add("b/udev");
  r = pass(c);
  EXPECT_FALSE(r.walk_skipped);
  EXPECT_TRUE(has(c, "b/udev"));
}

}  // namespace
}  // namespace memcg

namespace memcg {
namespace {

using namespace std::chrono_literals;

// What the scrape's compressed identity head is keyed on (the roster of
// cgroups and rules, the bound container records, the removed cgroups;
// exporter/http/scrape_cache.h) stays the very same objects across rescans
// that find the same tree, with the hook's records on: otherwise every scrape
// after a rescan renders and compresses the head again.
TEST(RescanIdentity, RescansThatFindTheSameTreeKeepWhatTheIdentityHeadIsKeyedOn) {
  fixtures::Tree tree;
  const std::string id(64, 'c');
  for (const std::string& p : {std::string("machine.slice"), "machine.slice/libpod-" + id + ".scope", std::string("system.slice")})
    tree.add(p);
  tree.write("/", "cgroup.stat", "nr_descendants 3\nnr_dying_descendants 0\n");  // rescans counted as well as walked
  struct Records {  // the hook's directory, beside the tree and gone with the test however it ends
    std::string dir;
    ~Records() { std::filesystem::remove_all(dir); }
  } hook{tree.root() + "-records"};
  const std::string& records = hook.dir;
  std::filesystem::create_directories(records);
  auto cfg = config::Config::builtin({4096, 1});
  cfg.collector.rescan_interval = 1s;  // a rescan every pass
  cfg.containers.records_dir = records;
  cfg.resolve();
  ManualClock clock;
  fixtures::FaultyIo io;
  Collector c(tree.root(), cfg, clock, io);
  clock.advance(1s);
  ASSERT_TRUE(c.run_pass().rescanned);
  const auto first = c.latest();
  ASSERT_TRUE(first->records) << "the hook's directory is on: records are bound";
  for (int i = 0; i < 8; ++i) {  // walked and counted rescans alike
    clock.advance(1s);
    ASSERT_TRUE(c.run_pass().rescanned);
    const auto now = c.latest();
    EXPECT_EQ(now->records, first->records) << "rescan " << i;
    EXPECT_EQ(now->roster, first->roster) << "rescan " << i;
    EXPECT_EQ(now->removed, first->removed) << "rescan " << i;
  }
  EXPECT_GT(c.latest()->rescans_counted, 0u);
  EXPECT_GT(c.latest()->rescans_walked, 1u);
  tree.add("system.slice/new.service");
  tree.write("/", "cgroup.stat", "nr_descendants 4\nnr_dying_descendants 0\n");
  for (int i = 0; i < 2 && c.latest()->cgroups.size() == first->cgroups.size(); ++i) {
    clock.advance(1s);
    c.run_pass();
  }
  EXPECT_NE(c.latest()->roster, first->roster) << "a new cgroup is a new roster";
}

}  // namespace
}  // namespace memcg
