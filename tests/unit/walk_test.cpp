#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "config/config.h"
#include "plugin/cgroupfs/walk.h"
#include "tests/fixtures/fd_limit.h"
#include "tests/fixtures/tree.h"

namespace memcg::cgroupfs {
namespace {

std::vector<std::string> paths(const WalkResult& r) {
  std::vector<std::string> out;
  for (const auto& f : r.cgroups) out.push_back(f.path);
  return out;
}

config::CollectorConfig cfg() {
  config::CollectorConfig c;
  c.max_depth = 8;
  c.max_cgroups = 1000;
  return c;
}

config::Glob glob(const char* p) { return *config::Glob::compile(p, nullptr); }

TEST(Walk, PreOrderWithDepthAndInodes) {
  fixtures::Tree t;
  for (const char* p : {"a", "a/x", "a/x/deep", "a-b", "b"}) t.add(p);
  auto r = walk(t.root(), cfg());
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/x", "a/x/deep", "a-b", "b"}));
  EXPECT_EQ(r.cgroups[3].depth, 3);
  EXPECT_NE(r.cgroups[1].inode, 0u);
  EXPECT_NE(r.cgroups[1].inode, r.cgroups[2].inode);
  EXPECT_EQ(r.limited, 0u);
  EXPECT_TRUE(r.errors.empty());
}

TEST(Walk, MaxDepthStopsDescent) {
  fixtures::Tree t;
  for (const char* p : {"a", "a/b", "a/b/c", "a/b/c/d"}) t.add(p);
  auto c = cfg();
  c.max_depth = 2;
  EXPECT_EQ(paths(walk(t.root(), c)), (std::vector<std::string>{"/", "a", "a/b"}));
  c.max_depth = 0;
  EXPECT_EQ(paths(walk(t.root(), c)), (std::vector<std::string>{"/"}));
}

TEST(Walk, IncludeExcludeGlobs) {
  fixtures::Tree t;
  for (const char* p : {"system.slice", "system.slice/ssh.service", "system.slice/cron.service", "user.slice",
                        "user.slice/user-1000.slice"})
    t.add(p);
  auto c = cfg();
  c.include = {glob("system.slice/**")};
  c.exclude = {glob("**/cron.service")};
  EXPECT_EQ(paths(walk(t.root(), c)), (std::vector<std::string>{"system.slice/ssh.service"}))
      << "excluded parents are still descended into";
}

TEST(Walk, CapKeepsShallowestAndCountsTheRest) {
  fixtures::Tree t;
  for (const char* p : {"a", "b", "a/x", "a/y", "b/z"}) t.add(p);
  auto c = cfg();
  c.max_cgroups = 3;
  auto r = walk(t.root(), c);
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "b"}));
  EXPECT_EQ(r.limited, 3u);
}

TEST(Walk, DirectoriesWithoutMemoryControllerAreSkippedAndCounted) {
  fixtures::Tree t;
  t.add("a");
  t.add_plain_dir("nomem");
  t.add_plain_dir("nomem/child");  // cannot have memory when its parent has none
  auto r = walk(t.root(), cfg());
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a"}));
  EXPECT_EQ(r.no_memory, 1u);
  EXPECT_TRUE(r.errors.empty());
}

TEST(Walker, NamesTheDirectoriesWithoutTheController) {
  fixtures::Tree t;
  t.add("a");
  t.add_plain_dir("a/udev");
  t.add_plain_dir("a/udev/below");  // not entered
  t.add_plain_dir("nomem");
  Walker w;
  w.walk(t.root(), cfg());
  EXPECT_EQ(w.without_memory(), (std::vector<std::string>{"nomem", "a/udev"})) << "breadth-first";
  w.walk(t.root(), cfg());
  EXPECT_EQ(w.without_memory(), (std::vector<std::string>{"nomem", "a/udev"})) << "an unchanged walk finds them again";
  t.remove("nomem");
  t.add("a/udev");  // the controller arrived
  w.walk(t.root(), cfg());
  EXPECT_EQ(w.without_memory(), (std::vector<std::string>{"a/udev/below"})) << "now entered";
}

TEST(Walk, MissingRootIsReported) {
  auto r = walk("/nonexistent/cgroup", cfg());
  EXPECT_FALSE(r.root_ok);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].err, ENOENT);
  EXPECT_NE(r.errors[0].message().find("/nonexistent/cgroup"), std::string::npos);
}

TEST(Walk, HoldsThreeDescriptorsWhateverTheTreesWidth) {
  // 0.1's walk kept every queued directory open: 300 siblings needed 300
  // descriptors and failed with EMFILE exactly when the process was short.
  fixtures::Tree t;
  for (int i = 0; i < 300; ++i) t.add("pod" + std::to_string(i));
  t.add("pod7/ctr");
  fixtures::FdLimitScope limit(3);
  auto r = walk(t.root(), cfg());
  EXPECT_EQ(r.cgroups.size(), 302u);
  EXPECT_TRUE(r.errors.empty()) << r.errors[0].message();
  EXPECT_TRUE(r.unknown.empty());
}

TEST(Walk, WhatCouldNotBeOpenedIsUnknownNotAbsent) {
  fixtures::Tree t;
  for (const char* p : {"a", "a/x", "b"}) t.add(p);
  {
    fixtures::FdLimitScope limit(1);  // the root opens, its listing does not
    auto r = walk(t.root(), cfg());
    EXPECT_EQ(paths(r), (std::vector<std::string>{"/"}));
    ASSERT_EQ(r.unknown.size(), 1u);
    EXPECT_FALSE(r.unknown[0].self);
    EXPECT_TRUE(r.unknown[0].covers("a") && r.unknown[0].covers("a/x") && r.unknown[0].covers("b"));
    EXPECT_FALSE(r.unknown[0].covers("/"));
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(r.errors[0].err, EMFILE);
  }
  const Unknown dir{"a", true};
  EXPECT_TRUE(dir.covers("a") && dir.covers("a/x"));
  EXPECT_FALSE(dir.covers("a-b") || dir.covers("b"));
}

TEST(Walker, AnUnchangedTreeIsNotListedAgain) {
  fixtures::Tree t;
  for (const char* p : {"a", "a/x", "a/y", "b", "b/z"}) t.add(p);
  Walker w;
  auto first = w.walk(t.root(), cfg());
  EXPECT_EQ(first.listed, 6u);  // "/" and the five
  auto again = w.walk(t.root(), cfg());
  EXPECT_EQ(again.listed, 0u);
  EXPECT_EQ(again.reused, 6u);
  EXPECT_EQ(paths(again), paths(first));
  EXPECT_EQ(again.cgroups[1].inode, first.cgroups[1].inode);
}

TEST(Walker, SaysWhenItFoundExactlyWhatItFoundLastTime) {
  fixtures::Tree t;
  for (const char* p : {"a", "a/x", "b"}) t.add(p);
  Walker w;
  EXPECT_FALSE(w.walk(t.root(), cfg()).same_as_last);
  auto r = w.walk(t.root(), cfg(), /*elide_unchanged=*/true);
  EXPECT_TRUE(r.same_as_last);
  EXPECT_TRUE(r.cgroups.empty()) << "elided: the caller's copy stands";
  r = w.walk(t.root(), cfg());
  EXPECT_TRUE(r.same_as_last);
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/x", "b"})) << "not elided unless asked";
  // Removed and created again under the same name (a's link count ends where
  // it was): a new inode, not the same. recreate() keeps the old directory
  // alive until the new one exists, because a fixture file system may hand a
  // freed inode number straight back (cgroupfs does not reuse ids).
  t.recreate("a/x");
  r = w.walk(t.root(), cfg(), true);
  EXPECT_FALSE(r.same_as_last);
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/x", "b"}));
  EXPECT_TRUE(w.walk(t.root(), cfg(), true).same_as_last);
  t.add("b/y");
  r = w.walk(t.root(), cfg(), true);
  EXPECT_FALSE(r.same_as_last);
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/x", "b", "b/y"}));
  t.remove("b/y");
  r = w.walk(t.root(), cfg(), true);
  EXPECT_FALSE(r.same_as_last);
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/x", "b"}));
}

TEST(Walker, OnlyTheChangedDirectoryIsListed) {
  fixtures::Tree t;
  for (const char* p : {"a", "a/x", "b"}) t.add(p);
  Walker w;
  w.walk(t.root(), cfg());
  t.add("a/new");
  auto r = w.walk(t.root(), cfg());
  EXPECT_EQ(r.listed, 2u) << "a (one more subdirectory) and the new cgroup itself";
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/new", "a/x", "b"}));
  t.remove("a/x");
  r = w.walk(t.root(), cfg());
  EXPECT_EQ(r.listed, 1u);
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/new", "b"}));
  t.recreate("b");  // same name, new inode: listed again
  r = w.walk(t.root(), cfg());
  EXPECT_EQ(r.listed, 1u);
}

TEST(Walker, ARenameInPlaceIsFoundByTheSameWalk) {
  // A rename keeps the parent's link count: the reused listing names the old
  // name, found gone, and the walk goes round once more listing the parent.
  fixtures::Tree t;
  for (const char* p : {"a", "a/x", "b"}) t.add(p);
  Walker w;
  w.walk(t.root(), cfg());
  ASSERT_EQ(::rename((t.root() + "/a/x").c_str(), (t.root() + "/a/z").c_str()), 0);
  auto r = w.walk(t.root(), cfg());
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/z", "b"}));
  EXPECT_EQ(r.listed, 2u) << "a, in the second round, and a/z, new";
  r = w.walk(t.root(), cfg());
  EXPECT_EQ(r.listed, 0u) << "settled again: no second round";
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/z", "b"}));
}

TEST(Walker, ACgroupRemovedAndAnotherCreatedInOneDirectoryAreBothSeenByOneWalk) {
  // rmdir + mkdir under one parent between two walks: same link count.
  fixtures::Tree t;
  for (const char* p : {"a", "a/x", "a/y"}) t.add(p);
  Walker w;
  w.walk(t.root(), cfg());
  t.remove("a/x");
  t.add("a/new");
  const auto r = w.walk(t.root(), cfg());
  EXPECT_EQ(paths(r), (std::vector<std::string>{"/", "a", "a/new", "a/y"}));
}

TEST(Walker, TheMemoryControllerEnabledLaterIsSeen) {
  fixtures::Tree t;
  t.add("a");
  t.add_plain_dir("nomem");
  Walker w;
  EXPECT_EQ(paths(w.walk(t.root(), cfg())), (std::vector<std::string>{"/", "a"}));
  // Enabling a controller changes no link count; memory.stat appearing does.
  std::FILE* f = std::fopen((t.root() + "/nomem/memory.stat").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_EQ(paths(w.walk(t.root(), cfg())), (std::vector<std::string>{"/", "a", "nomem"}));
}

TEST(Walker, EveryThirtiethWalkListsEverything) {
  fixtures::Tree t;
  for (const char* p : {"a", "b"}) t.add(p);
  Walker w;
  uint64_t full = 0;
  for (uint64_t i = 0; i < 2 * Walker::kFullEvery; ++i) full += w.walk(t.root(), cfg()).listed == 3 ? 1u : 0u;
  EXPECT_EQ(full, 2u);
}

TEST(PathOrder, ParentsFirstSubtreesContiguous) {
  std::vector<std::string> v{"a-b", "a/x", "/", "a", "a/x/y", "b", "a.b"};
  std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return path_before(x, y); });
  EXPECT_EQ(v, (std::vector<std::string>{"/", "a", "a/x", "a/x/y", "a-b", "a.b", "b"}));
}

}  // namespace
}  // namespace memcg::cgroupfs
