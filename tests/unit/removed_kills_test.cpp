// removed_kills.h: what a parent's counts leave unexplained, and where a
// gain goes when a child was removed before its own counts were read.
#include "plugin/removed_kills.h"

#include <gtest/gtest.h>

namespace memcg {
namespace {

parse::EventValues counts(uint64_t oom, uint64_t oom_kill, uint64_t group) {
  parse::EventValues v;
  for (auto [k, n] : {std::pair{parse::ev_oom, oom}, {parse::ev_oom_kill, oom_kill}, {parse::ev_oom_group_kill, group}}) {
    v.values[k] = n;
    v.present.set(k);
  }
  return v;
}

TEST(RemovedKills, TheUnexplainedCountIsTheParentsLessItsOwnItsChildrenAndThoseRemoved) {
  KillLedger ledger;
  ledger.retired = {1, 1, 0};
  // 9 kills under the parent: 2 its own, 5 in live children, 1 in a child
  // removed and read, 1 nobody read.
  EXPECT_EQ(unexplained(counts(9, 9, 0), counts(2, 2, 0), KillCounts{5, 5, 0}, ledger), (KillCounts{1, 1, 0}));
  EXPECT_TRUE(any_gain({1, 1, 0}, {1, 0, 0}));
  EXPECT_FALSE(any_gain({1, 1, 0}, {1, 1, 0}));
  EXPECT_FALSE(any_gain({0, 0, 0}, {1, 1, 1}));
}

TEST(RemovedKills, TheGainGoesToTheOneChildRemovedUnreadAndNowhereElse) {
  KillLedger ledger;
  ledger.base = KillCounts{3, 3, 0};  // kills of children removed before the exporter started
  const KillCounts now{4, 5, 1};
  const Recovery one = recover(ledger, now, {.unread = 1, .all_children_known = true});
  EXPECT_EQ(one.given, (KillCounts{1, 2, 1}));
  EXPECT_EQ(one.unattributed, (KillCounts{}));

  const Recovery two = recover(ledger, now, {.unread = 2, .all_children_known = true});
  EXPECT_EQ(two.given, (KillCounts{})) << "two candidates: which had the kill is unknown";
  EXPECT_EQ(two.unattributed, (KillCounts{1, 2, 1}));

  const Recovery hidden = recover(ledger, now, {.unread = 1, .all_children_known = false});
  EXPECT_EQ(hidden.given, (KillCounts{})) << "a descendant not collected may have had it";
  EXPECT_EQ(hidden.unattributed, (KillCounts{1, 2, 1}));

  EXPECT_EQ(recover(ledger, now, {.unread = 0, .all_children_known = true}).given, (KillCounts{}))
      << "every removed child was read after its exit: its counts are final";
  EXPECT_EQ(recover(ledger, KillCounts{2, 3, 0}, {.unread = 1, .all_children_known = true}).given, (KillCounts{0, 0, 0}))
      << "a child first read with kills it had before lowers the count: nothing to give";
  EXPECT_EQ(recover(KillLedger{}, now, {.unread = 1, .all_children_known = true}).given, (KillCounts{}))
      << "no settled count yet: no gain to measure";
}

}  // namespace
}  // namespace memcg
