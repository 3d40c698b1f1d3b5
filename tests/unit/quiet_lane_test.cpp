// The quiet lane (plugin/quiet_lane.h) settles a quiet cgroup's probe and
// flush decision from a compact record. It must conclude exactly what the
// full probe and decision conclude: two collectors over one tree, both with
// their memory.events polled (so both take quiet probes), one with the lane
// and one without, driven through the same random walk of usage changes,
// event flags, forced refreshes, cgroups coming and going, configuration
// reloads and passes that do not advance the clock, see the same values,
// reads and skips pass after pass; on a host without swap and on one with
// swap, where the lane compares memory.swap.current's bytes as well.
#include <gtest/gtest.h>

#include <random>

#include "config/config.h"
#include "plugin/cache/flush_policy.h"
#include "plugin/collector.h"
#include "tests/fixtures/fake_poller.h"
#include "tests/fixtures/faulty_io.h"
#include "tests/fixtures/same_views.h"
#include "tests/fixtures/tree.h"

namespace memcg {
namespace {

using namespace std::chrono_literals;

struct Side {
  std::unique_ptr<Collector> c;
  fixtures::FakePoller* poller = nullptr;
};

// (a read budget in reads a second, 0 for none; whether the host has swap)
class QuietLaneTest : public ::testing::TestWithParam<std::tuple<double, bool>> {
 protected:
  QuietLaneTest() {
    io.swap_ = std::get<1>(GetParam());
    fixtures::CgroupSpec s;
    s.current = 8 << 20;
    s.swap = 0;
    s.stat.set("anon", 8 << 20);
    for (int p = 0; p < 3; ++p) {
      tree.add(pod(p), s);
      for (int c = 0; c < 6; ++c) tree.add(leaf(p, c), s);
    }
    cfg = config::Config::builtin({4096, 1});
    cfg.collector.rescan_interval = 3s;
    cfg.collector.max_stat_reads_per_second = std::get<0>(GetParam());  // 0: no budget
    cfg.resolve();
    lane = make(true);
    full = make(false);
  }
  static std::string pod(int p) { return "pod" + std::to_string(p) + ".slice"; }
  static std::string leaf(int p, int c) { return pod(p) + "/c" + std::to_string(c) + ".scope"; }
  Side make(bool with_lane) {
    Side s{std::make_unique<Collector>(tree.root(), cfg, clock, io), nullptr};
    auto poller = std::make_unique<fixtures::FakePoller>();
    s.poller = poller.get();
    s.c->set_event_poller(std::move(poller));
    s.c->set_quiet_lane(with_lane);
    return s;
  }
  void both_pass() {
    lane.c->run_pass();
    full.c->run_pass();
  }
  void expect_same() {
    const auto a = lane.c->latest(), b = full.c->latest();
    fixtures::expect_same_views(*a, *b);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_EQ(a->reads, b->reads);
    EXPECT_EQ(a->skips, b->skips);
    EXPECT_EQ(a->reads_deferred, b->reads_deferred);
    EXPECT_EQ(a->file_reads, b->file_reads);
    EXPECT_EQ(a->quiet_probes, b->quiet_probes);
  }
  // One random step of the world between two passes.
  void step(std::mt19937& rng, int pass) {
    std::uniform_real_distribution<double> u(0, 1);
    for (int p = 0; p < 3; ++p)
      for (int c = 0; c < 6; ++c) {
        if (!present[p][c]) continue;
        const double r = u(rng);
        if (r < 0.15) tree.set_current(leaf(p, c), (8u << 20) + static_cast<uint64_t>(u(rng) * 2048) * 4096);
        else if (r < 0.18) tree.set_current(leaf(p, c), 8u << 20);  // back to bytes seen before
        else if (r < 0.20) tree.set_swap(leaf(p, c), static_cast<uint64_t>(u(rng) * 4) * 4096);  // 0 a quarter of the time
        if (u(rng) < 0.03) {
          tree.write(leaf(p, c), "memory.events",
                     "low 0\nhigh " + std::to_string(pass) + "\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n");
          for (Side* s : {&lane, &full}) s->poller->flag(tree.root() + "/" + leaf(p, c) + "/memory.events");
        }
      }
    if (u(rng) < 0.03) {  // a pod's memory.events counts its leaves' events too
      const std::string p = pod(static_cast<int>(u(rng) * 3));
      tree.write(p, "memory.events", "low 0\nhigh " + std::to_string(pass) + "\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n");
      for (Side* s : {&lane, &full}) s->poller->flag(tree.root() + "/" + p + "/memory.events");
    }
    if (u(rng) < 0.03) {
      const auto glob = config::Glob::compile(pod(static_cast<int>(u(rng) * 3)) + "/*", nullptr);
      for (Side* s : {&lane, &full}) s->c->request_refresh(*glob);
    }
    if (u(rng) < 0.03) {  // a container comes or goes (seen at the next rescan, or as gone)
      const int p = static_cast<int>(u(rng) * 3), c = 5;
      if (present[p][c]) tree.remove(leaf(p, c));
      else tree.add(leaf(p, c), newcomer);
      present[p][c] = !present[p][c];
    }
    if (u(rng) < 0.02) {  // a reload: other rules, other due times
      config::Config next = cfg;
      next.defaults.max_age = u(rng) < 0.5 ? 5s : 10s;
      next.resolve();
      for (Side* s : {&lane, &full}) s->c->set_config(next);
    }
    const double t = u(rng);
    clock.advance(t < 0.05 ? 0s : t < 0.1 ? 500ms : t < 0.15 ? 2s : 1s);  // 0: a pass at the same time
  }

  fixtures::Tree tree;
  fixtures::FaultyIo io;
  fixtures::CgroupSpec newcomer;
  config::Config cfg;
  ManualClock clock;
  Side lane, full;
  bool present[3][6] = {{true, true, true, true, true, true},
                        {true, true, true, true, true, true},
                        {true, true, true, true, true, true}};
};

TEST_P(QuietLaneTest, SettlesWhatTheFullProbeAndDecisionWould) {
  std::mt19937 rng(20261205);
  clock.advance(1s);
  both_pass();
  for (int pass = 1; pass <= 400; ++pass) {
    step(rng, pass);
    both_pass();
    expect_same();
    if (HasFatalFailure()) return;
  }
  // The walk leaves the lane often (a rescan every 3 s that finds a change,
  // reloads, flags, passes at the same time); it must still have been taken.
  const auto a = lane.c->latest(), b = full.c->latest();
  EXPECT_EQ(b->lane_probes, 0u);
  EXPECT_GT(a->lane_probes, a->quiet_probes / 20) << "quiet " << a->quiet_probes;
}

// A still tree: after a cgroup's first quiet probe, the lane settles every
// pass but those that read memory.stat (max_age, 10 s) and the first of
// each 10 s bucket of the one-minute high, both probed quiet from the
// record: about 3 passes in 4 (2 in 3 while the pass after each read and
// a new bucket took the long way).
TEST_P(QuietLaneTest, SettlesMostPassesOfAStillTree) {
  clock.advance(1s);
  both_pass();
  for (int pass = 1; pass <= 120; ++pass) {
    clock.advance(1s);
    both_pass();
    expect_same();
  }
  const auto a = lane.c->latest();
  const uint64_t probes = 120u * a->cgroups.size();
  EXPECT_GT(a->lane_probes, probes * 7 / 10) << "of " << probes << " probes, " << a->quiet_probes << " quiet";
}

// One container reclaiming at its memory.high: the kernel flags its
// memory.events (and its pod's) every pass. Only those two take the long
// way; the other 19 cgroups stay in the lane as in a still tree.
TEST_P(QuietLaneTest, AFlaggedCgroupLeavesTheOthersInTheLane) {
  clock.advance(1s);
  both_pass();
  for (int pass = 1; pass <= 120; ++pass) {
    for (const std::string& p : {leaf(0, 0), pod(0)}) {
      tree.write(p, "memory.events", "low 0\nhigh " + std::to_string(pass) + "\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n");
      for (Side* s : {&lane, &full}) s->poller->flag(tree.root() + "/" + p + "/memory.events");
    }
    clock.advance(1s);
    both_pass();
    expect_same();
    if (HasFatalFailure()) return;
  }
  const auto a = lane.c->latest();
  const uint64_t others = 120u * (a->cgroups.size() - 2);
  EXPECT_GT(a->lane_probes, others * 6 / 10) << "of " << others << " probes of the others, " << a->quiet_probes << " quiet";
}

INSTANTIATE_TEST_SUITE_P(BudgetsAndSwap, QuietLaneTest,
                         ::testing::Combine(::testing::Values(0.0, 3.0), ::testing::Bool()));

// The lane's due time is decide_flush's max_age condition solved for now.
TEST(MaxAgeDue, IsTheFirstTimeDecideFlushSaysMaxAge) {
  std::mt19937_64 rng(7);
  for (int k = 0; k < 20000; ++k) {
    cache::FlushInput in;
    in.last_read = TimePoint(Duration(static_cast<int64_t>(rng() % 1'000'000'000'000)));
    in.threshold = 1;
    in.max_age = Duration(static_cast<int64_t>(rng() % 20'000'000'000) + 1);
    in.lookahead = Duration(static_cast<int64_t>(rng() % 2'000'000'000));
    in.phase = Duration(static_cast<int64_t>(rng() % 5'000'000'000));
    const TimePoint due = cache::max_age_due(in);
    EXPECT_EQ(cache::decide_flush(in, due), cache::ReadReason::max_age);
    EXPECT_EQ(cache::decide_flush(in, due - Duration(1)), std::nullopt);
  }
  cache::FlushInput far;
  far.last_read = TimePoint(Duration(1'000'000'000'000));
  far.max_age = Duration::max();
  EXPECT_EQ(cache::max_age_due(far), TimePoint::max());
  // Just after boot the steady clock is younger than lookahead + phase: the
  // due time is still exact, and a centuries-long max_age still saturates.
  cache::FlushInput early;
  early.last_read = TimePoint(Duration(1'000'000));
  early.lookahead = Duration(2'000'000'000);
  early.phase = Duration(3'000'000'000);
  early.max_age = Duration(10'000'000'000);
  EXPECT_EQ(cache::max_age_due(early), TimePoint(Duration(5'001'000'000)));
  early.max_age = Duration::max();
  EXPECT_EQ(cache::max_age_due(early), TimePoint(Duration::max() - Duration(4'999'000'000)));
}

}  // namespace
}  // namespace memcg
