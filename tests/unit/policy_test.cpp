#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "plugin/cache/budget.h"
#include "plugin/cache/companion_reads.h"
#include "plugin/cache/flush_policy.h"
#include "plugin/cache/pending.h"
#include "plugin/cache/rates.h"
#include "plugin/cache/window_max.h"

namespace memcg::cache {
namespace {

using namespace std::chrono_literals;
const TimePoint t0 = TimePoint{} + 1h;

FlushInput fresh() {
  FlushInput in;
  in.last_read = t0;
  in.threshold = 1000;
  in.max_age = 10s;
  return in;
}

TEST(FlushPolicy, FirstSightIsInitial) {
  FlushInput in = fresh();
  in.last_read.reset();
  EXPECT_EQ(decide_flush(in, t0), ReadReason::initial);
}

TEST(FlushPolicy, BelowThresholdYoungAndQuietIsSkipped) {
  FlushInput in = fresh();
  in.pending = 999;
  EXPECT_EQ(decide_flush(in, t0 + 9999ms), std::nullopt);
}

TEST(FlushPolicy, EachReason) {
  FlushInput in = fresh();
  in.pending = 1000;
  EXPECT_EQ(decide_flush(in, t0 + 1s), ReadReason::threshold) << "threshold is inclusive";
  in = fresh();
  in.events_moved = true;
  EXPECT_EQ(decide_flush(in, t0 + 1s), ReadReason::event);
  in = fresh();
  EXPECT_EQ(decide_flush(in, t0 + 10s), ReadReason::max_age) << "max_age is inclusive";
  in = fresh();
  in.lookahead = 1s;
  EXPECT_EQ(decide_flush(in, t0 + 8999ms), std::nullopt);
  EXPECT_EQ(decide_flush(in, t0 + 9s), ReadReason::max_age)
      << "read one pass early so the value is never older than max_age before the next pass";
  in = fresh();
  in.forced = true;
  EXPECT_EQ(decide_flush(in, t0 + 1s), ReadReason::forced);
}

TEST(FlushPolicy, PhaseBringsOnlyTheRefreshForward) {
  FlushInput in = fresh();
  in.lookahead = 1s;
  in.phase = 4s;
  EXPECT_EQ(decide_flush(in, t0 + 4999ms), std::nullopt);
  EXPECT_EQ(decide_flush(in, t0 + 5s), ReadReason::max_age);
  const Duration span = 10s;
  std::set<Duration::rep> seen;
  for (uint64_t inode = 1000; inode < 1100; ++inode) {
    const Duration p = refresh_phase(inode, span);
    EXPECT_GE(p.count(), 0);
    EXPECT_LT(p, span);
    seen.insert(std::chrono::duration_cast<std::chrono::seconds>(p).count());
  }
  EXPECT_EQ(seen.size(), 10u) << "consecutive inodes land in every second of the span";
  EXPECT_EQ(refresh_phase(7, 0s), Duration{0});
}

TEST(ReadBudget, PriorityOrder) {
  const std::vector<ReadCandidate> wanted{
      {0, ReadReason::threshold, 1.5, 2s}, {1, ReadReason::forced, 0, 1s},  {2, ReadReason::max_age, 0, 9s},
      {3, ReadReason::threshold, 7.0, 1s}, {4, ReadReason::initial, 0, 0s}, {5, ReadReason::event, 0, 3s},
      {6, ReadReason::max_age, 0, 12s}};
  std::vector<uint32_t> order;
  for (const auto& c : choose_reads(wanted, 100)) order.push_back(c.index);
  EXPECT_EQ(order, (std::vector<uint32_t>{6, 2, 4, 5, 3, 0, 1}));
  EXPECT_EQ(choose_reads(wanted, 2).size(), 2u);
  EXPECT_EQ(choose_reads(wanted, 2)[0].index, 6u);
  EXPECT_TRUE(choose_reads(wanted, 0).empty());
}

TEST(ReadBudget, FractionsCarryOver) {
  BudgetMeter m;
  uint64_t total = 0;
  for (int i = 0; i < 10; ++i) total += m.take(2.5, 1s);
  EXPECT_EQ(total, 25u);
  BudgetMeter slow;
  uint64_t got = 0;
  for (int i = 0; i < 10; ++i) got += slow.take(0.2, 500ms);
  EXPECT_EQ(got, 1u);
}

TEST(FlushPolicy, FirstApplicableReasonIsRecorded) {
  FlushInput in = fresh();
  in.pending = 5000;
  in.events_moved = true;
  in.forced = true;
  EXPECT_EQ(decide_flush(in, t0 + 20s), ReadReason::threshold);
  in.pending = 0;
  EXPECT_EQ(decide_flush(in, t0 + 20s), ReadReason::event);
  in.events_moved = false;
  EXPECT_EQ(decide_flush(in, t0 + 20s), ReadReason::max_age);
  in.last_read.reset();
  EXPECT_EQ(decide_flush(in, t0 + 20s), ReadReason::initial);
}

TEST(FlushPolicy, ZeroThresholdAlwaysReads) {
  FlushInput in = fresh();
  in.threshold = 0;
  EXPECT_EQ(decide_flush(in, t0), ReadReason::threshold);
}

// Tree: 0 = root (no memory.current), 1 = a, 2 = a/x, 3 = a/y, 4 = b.
struct TreeCase {
  std::vector<int> parent{-1, 0, 1, 1, 0};
  std::vector<ProbeDelta> delta = std::vector<ProbeDelta>(5);
  std::vector<uint64_t> change = std::vector<uint64_t>(5);
  std::vector<int64_t> s1 = std::vector<int64_t>(5), s2 = std::vector<int64_t>(5);
  void run() { subtree_change(parent, delta, change, s1, s2); }
};

TEST(Pending, LeafChangeReachesEveryAncestorOnce) {
  TreeCase t;
  t.delta[2] = {true, 5000, 0};  // a/x grew 5000
  t.delta[1] = {true, 5000, 0};  // so did a (it contains a/x)
  t.delta[3] = {true, 0, 0};
  t.delta[4] = {true, 0, 0};
  t.run();
  EXPECT_EQ(t.change[2], 5000u);
  EXPECT_EQ(t.change[1], 5000u) << "the parent's own delta is the child's, not counted twice";
  EXPECT_EQ(t.change[0], 5000u) << "the root has no memory.current but sees its subtree";
  EXPECT_EQ(t.change[3], 0u);
  EXPECT_EQ(t.change[4], 0u);
}

TEST(Pending, OppositeChildrenStillChangeTheParent) {
  TreeCase t;
  t.delta[2] = {true, 4096, 0};
  t.delta[3] = {true, -4096, 0};
  t.delta[1] = {true, 0, 0};  // net zero at a
  t.delta[4] = {true, 0, 0};
  t.run();
  EXPECT_EQ(t.change[1], 8192u);
  EXPECT_EQ(t.change[0], 8192u);
}

TEST(Pending, SwapCountsAndUnexplainedParentChangeIsLocal) {
  TreeCase t;
  t.delta[2] = {true, 100, 300};   // a/x: 100 current + 300 swap
  t.delta[3] = {true, 0, 0};
  t.delta[1] = {true, 1100, 300};  // a: 1000 more than its children explain
  t.delta[4] = {false, 0, 0};      // b: first probe, no delta yet
  t.run();
  EXPECT_EQ(t.change[2], 400u);
  EXPECT_EQ(t.change[1], 1400u);
  EXPECT_EQ(t.change[0], 1400u);
  EXPECT_EQ(t.change[4], 0u);
}

TEST(Rates, CounterResetIsNeverNegative) {
  EXPECT_DOUBLE_EQ(counter_rate(100, 300, 2s), 100.0);
  EXPECT_DOUBLE_EQ(counter_rate(1000, 50, 1s), 50.0) << "a reset counts from zero";
  EXPECT_DOUBLE_EQ(counter_rate(7, 7, 500ms), 0.0);
}

TEST(Rates, GaugeDerivativeIsSigned) {
  EXPECT_DOUBLE_EQ(gauge_rate(4096, 0, 2s), -2048.0);
  EXPECT_DOUBLE_EQ(gauge_rate(0, 4096, 500ms), 8192.0);
}

TEST(Companions, AQuietCgroupsMaxAgeReadTakesNothingUntilTheirOwnMaxAge) {
  CompanionInput in;
  in.reason = ReadReason::max_age;
  in.limits_at = in.peak_at = in.pressure_at = t0;
  in.moved_since_peak = false;
  in.max_age = 60s;
  CompanionReads r = decide_companions(in, t0 + 10s);
  EXPECT_FALSE(r.limits);
  EXPECT_FALSE(r.peak);
  EXPECT_FALSE(r.pressure);
  r = decide_companions(in, t0 + 60s);
  EXPECT_TRUE(r.limits);
  EXPECT_TRUE(r.peak);
  EXPECT_TRUE(r.pressure) << "a stall with no change in usage is bounded by max_age";
}

TEST(Companions, AWatchedCgroupsLimitsAreReadAtMaxAgeOnlyAfterAWrite) {
  CompanionInput in;
  in.reason = ReadReason::max_age;
  in.limits_at = in.peak_at = in.pressure_at = t0;
  in.moved_since_peak = false;
  in.max_age = 60s;
  in.limits_watched = true;
  EXPECT_FALSE(decide_companions(in, t0 + 600s).limits) << "nothing written: what was read is what the files say";
  EXPECT_TRUE(decide_companions(in, t0 + 600s).peak) << "the watch says nothing of memory.peak";
  in.limits_changed = true;
  EXPECT_FALSE(decide_companions(in, t0 + 30s).limits) << "a write is read at most every max_age, as before";
  EXPECT_TRUE(decide_companions(in, t0 + 60s).limits);
  in.limits_changed = false;
  in.reason = ReadReason::event;
  EXPECT_TRUE(decide_companions(in, t0 + 1s).limits) << "a limit event still takes them at once";
  in.reason = ReadReason::max_age;
  in.max_age = 0s;
  EXPECT_TRUE(decide_companions(in, t0 + 1s).limits) << "limits_max_age 0: with every read, watched or not";
}

TEST(Companions, MovedUsageTakesThePeakAndAProbedPressureIsNotReadTwice) {
  CompanionInput in;
  in.reason = ReadReason::threshold;
  in.limits_at = in.peak_at = in.pressure_at = t0;
  in.moved_since_peak = true;
  in.pressure_probed = true;
  in.max_age = 60s;
  CompanionReads r = decide_companions(in, t0 + 5s);
  EXPECT_FALSE(r.limits);
  EXPECT_TRUE(r.peak);
  EXPECT_FALSE(r.pressure);
  r = decide_companions(in, t0 + 90s);
  EXPECT_TRUE(r.limits);
  EXPECT_FALSE(r.pressure) << "this pass's probe read it";
}

TEST(Companions, EventForcedAndInitialReadsTakeEverythingTheProbeDidNotRead) {
  for (ReadReason reason : {ReadReason::initial, ReadReason::event, ReadReason::forced}) {
    CompanionInput in;
    in.reason = reason;
    in.limits_at = in.peak_at = in.pressure_at = t0;
    in.moved_since_peak = false;
    in.max_age = 60s;
    CompanionReads r = decide_companions(in, t0 + 1s);
    EXPECT_TRUE(r.limits && r.peak && r.pressure) << to_string(reason);
    in.pressure_probed = true;
    EXPECT_FALSE(decide_companions(in, t0 + 1s).pressure) << to_string(reason);
  }
  CompanionInput never;  // no record yet
  never.reason = ReadReason::max_age;
  never.moved_since_peak = false;
  never.max_age = 60s;
  const CompanionReads r = decide_companions(never, t0);
  EXPECT_TRUE(r.limits && r.peak && r.pressure);
}

}  // namespace
}  // namespace memcg::cache

namespace memcg::cache {
namespace {

TEST(WindowMax, ASpikeBetweenScrapesIsSeenForAMinuteThenForgotten) {
  const TimePoint start = TimePoint{} + 1h;
  WindowMax w;
  EXPECT_EQ(w.max(start), 0u) << "nothing probed";
  for (int s = 0; s < 15; ++s) w.observe(start + std::chrono::seconds(s), s == 7 ? 900 : 100);  // a spike at 7 s
  EXPECT_EQ(w.max(start + 14s), 900u);
  // A scrape every 15 s sees it at 15 s and 30 s, and still at 59 s.
  for (int s = 15; s < 60; ++s) w.observe(start + std::chrono::seconds(s), 100);
  EXPECT_EQ(w.max(start + 59s), 900u);
  w.observe(start + 60s, 100);
  EXPECT_EQ(w.max(start + 60s), 100u) << "its bucket [0 s, 10 s) left the window";
  // A gap in probing (a stalled pass) does not bring back old buckets.
  EXPECT_EQ(w.max(start + 10min), 0u);
  w.observe(start + 10min, 50);
  EXPECT_EQ(w.max(start + 10min), 50u);
}

// max() remembers its answer until a slot changes: asked again and again, as
// a quiet cgroup's probe asks every pass, it must say what a fresh look at
// every observation would, whatever came in between.
TEST(WindowMax, ARememberedHighIsAlwaysWhatEveryObservationSays) {
  const TimePoint start = TimePoint{} + 1h;
  WindowMax w;
  std::vector<std::pair<int64_t, uint64_t>> seen;  // bucket, value
  uint64_t seed = 42;
  auto next = [&seed](uint64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (seed >> 33) % n;
  };
  auto s = 0s;
  for (int step = 0; step < 5000; ++step) {
    s += std::chrono::seconds(next(4));  // often the same bucket, sometimes the next ones
    const TimePoint now = start + s;
    const auto at = WindowMax::at(now);
    if (next(3) != 0) {
      const uint64_t v = next(5) == 0 ? 1000 + next(1000) : next(100);
      w.observe(at, v);
      seen.emplace_back(at.bucket, v);
    }
    uint64_t want = 0;
    for (const auto& [b, v] : seen)
      if (b > at.bucket - static_cast<int64_t>(WindowMax::kBuckets) && b <= at.bucket) want = std::max(want, v);
    ASSERT_EQ(w.max(at), want) << "step " << step;
    ASSERT_EQ(w.max(at), want) << "asked again, step " << step;
  }
}

// The sparse propagation gives what the dense one gives, call after call
// on one instance (each call clears only what the previous one wrote), over
// random trees in pre-order with most cgroups still, some first probes
// (invalid deltas), parents that move with their children or against them.
TEST(Pending, SparseMatchesDenseOverRandomTrees) {
  std::mt19937 rng(42);
  SparseSubtreeChange sparse;
  for (int round = 0; round < 300; ++round) {
    const size_t n = round % 50 == 0 ? 1 + rng() % 300 : 120;  // now and then the table changes size
    std::vector<int> parent(n);
    for (size_t k = 0; k < n; ++k) parent[k] = k == 0 ? -1 : static_cast<int>(rng() % k);  // any earlier index: pre-order
    std::vector<ProbeDelta> delta(n);
    std::vector<uint32_t> moving;
    for (size_t k = 0; k < n; ++k) {
      const auto r = rng() % 100;
      if (r < 3) continue;  // first probe: invalid
      delta[k].valid = true;
      if (r < 85) continue;  // still
      delta[k].current = static_cast<int64_t>(rng() % 100000) - 50000;
      delta[k].swap = r < 90 ? static_cast<int64_t>(rng() % 1000) : 0;
      if (delta[k].current != 0 || delta[k].swap != 0) moving.push_back(static_cast<uint32_t>(k));
    }
    std::vector<uint64_t> dense(n);
    std::vector<int64_t> a(n), b(n);
    subtree_change(parent, delta, dense, a, b);
    const auto got = sparse.compute(parent, delta, moving);
    ASSERT_EQ(got.size(), n);
    for (size_t k = 0; k < n; ++k) ASSERT_EQ(got[k], dense[k]) << "round " << round << " cgroup " << k;
  }
}

}  // namespace
}  // namespace memcg::cache
