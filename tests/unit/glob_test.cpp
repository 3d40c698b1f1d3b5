#include <gtest/gtest.h>

#include "config/glob.h"

namespace memcg::config {
namespace {

struct Case {
  const char* pattern;
  const char* path;
  bool match;
};

TEST(Glob, MatchTable) {
  const Case cases[] = {
      {"**", "/", true},
      {"**", "a/b/c", true},
      {"*", "system.slice", true},
      {"*", "system.slice/foo.service", false},
      {"system.slice/*.service", "system.slice/foo.service", true},
      {"system.slice/*.service", "system.slice/foo.scope", false},
      {"system.slice/*.service", "system.slice/a/b.service", false},
      {"kubepods.slice/**", "kubepods.slice/kubepods-burstable.slice/x.scope", true},
      {"kubepods.slice/**", "kubepods.slice", false},
      {"**/cri-containerd-*.scope", "kubepods.slice/a/b/cri-containerd-abc.scope", true},
      {"**/cri-containerd-*.scope", "cri-containerd-abc.scope", true},
      {"a/**/b", "a/b", true},
      {"a/**/b", "a/x/y/b", true},
      {"a/**/b", "a/xb", false},
      {"user-?.slice", "user-1.slice", true},
      {"user-?.slice", "user-10.slice", false},
      {"user-[0-9].slice", "user-7.slice", true},
      {"user-[!0-9].slice", "user-7.slice", false},
      {"user-[!0-9].slice", "user-x.slice", true},
      {"a\\*b", "a*b", true},
      {"a\\*b", "axb", false},
      {"/", "/", true},
      {"/", "a", false},
  };
  for (const auto& c : cases) {
    std::string err;
    auto g = Glob::compile(c.pattern, &err);
    ASSERT_TRUE(g) << c.pattern << ": " << err;
    EXPECT_EQ(g->matches(c.path), c.match) << c.pattern << " vs " << c.path;
  }
}

TEST(Glob, BadPatternsAreRejectedWithAReason) {
  for (const char* p : {"", "a/[bc", "abc\\", "a**", "**b/c", "[z-a]", "x/[a/b]"}) {
    std::string err;
    EXPECT_FALSE(Glob::compile(p, &err)) << p;
    EXPECT_FALSE(err.empty()) << p;
  }
}

// Exponential by plain backtracking (C(200, 12) split points); must stay
// polynomial because cgroup paths come from container runtimes.
TEST(Glob, PathologicalPatternFinishes) {
  auto g = Glob::compile("*a*a*a*a*a*a*a*a*a*a*a*a*b", nullptr);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->matches(std::string(200, 'a')));
  auto gs = Glob::compile("**/a/**/a/**/a/**/a/**/b", nullptr);
  ASSERT_TRUE(gs);
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "a/";
  EXPECT_FALSE(gs->matches(deep + "c"));
  EXPECT_TRUE(gs->matches(deep + "b"));
}

}  // namespace
}  // namespace memcg::config
