// The daemon loop's timing decisions under a manual clock.
#include "exporter/schedule.h"

#include <gtest/gtest.h>

namespace memcg::exporter {
namespace {

using namespace std::chrono_literals;

TEST(PassSchedule, PassesKeepTheirRhythmAndNeverRunBackToBack) {
  ManualClock clock;
  PassSchedule s(1s, std::nullopt, clock.peek());
  EXPECT_TRUE(s.pass_due(clock.peek())) << "the first pass at once";
  clock.advance(300ms);  // the pass took 300 ms
  s.pass_done(clock.peek());
  EXPECT_EQ(s.wake_at(), clock.peek() + 700ms) << "an interval after the previous deadline";
  EXPECT_FALSE(s.pass_due(clock.peek() + 699ms));
  EXPECT_TRUE(s.pass_due(clock.peek() + 700ms));
  clock.advance(700ms);
  clock.advance(2500ms);  // a pass that overran by 1.5 intervals
  s.pass_done(clock.peek());
  EXPECT_EQ(s.wake_at(), clock.peek()) << "due now, not two passes to catch up";
  EXPECT_EQ(s.fell_behind(), 1u);
  s.pass_done(clock.peek());
  EXPECT_EQ(s.wake_at(), clock.peek() + 1s) << "and back to the rhythm";
  EXPECT_EQ(s.fell_behind(), 1u);
}

TEST(PassSchedule, TheWatchdogIsPingedFromTheWaitWhenTheIntervalIsLong) {
  ManualClock clock;
  PassSchedule s(60s, std::chrono::seconds(30), clock.peek());
  s.pass_done(clock.peek());
  EXPECT_EQ(s.wake_at(), clock.peek() + 15s) << "half of WatchdogSec, before the pass";
  clock.advance(15s);
  EXPECT_TRUE(s.ping_due(clock.peek()));
  EXPECT_FALSE(s.pass_due(clock.peek()));
  s.pinged(clock.peek());
  EXPECT_EQ(s.wake_at(), clock.peek() + 15s);
  clock.advance(45s);
  s.pinged(clock.peek());
  EXPECT_EQ(s.wake_at(), clock.peek()) << "the pass is due before the next ping";
  EXPECT_TRUE(s.pass_due(clock.peek()));

  PassSchedule quick(1s, std::chrono::seconds(30), clock.peek());
  quick.pass_done(clock.peek());
  EXPECT_EQ(quick.wake_at(), clock.peek() + 1s) << "passes ping often enough";
  EXPECT_FALSE(quick.ping_due(clock.peek() + 1s));
  PassSchedule none(60s, std::nullopt, clock.peek());
  EXPECT_FALSE(none.ping_due(clock.peek() + 1h));
}

TEST(PassSchedule, PassesPingAtHalfTheWatchdogAndRefreshTheStatusEveryTenSeconds) {
  ManualClock clock;
  PassSchedule s(1s, std::chrono::seconds(30), clock.peek());
  EXPECT_TRUE(s.status_due(clock.peek())) << "the first pass says its status (with READY=1)";
  s.status_sent(clock.peek());
  int pings = 0, statuses = 0;
  for (int pass = 1; pass <= 60; ++pass) {  // a minute of passes, each 100 ms long
    clock.advance(100ms);
    s.pass_done(clock.peek());
    if (s.ping_due(clock.peek())) {
      ++pings;
      s.pinged(clock.peek());
    }
    if (s.status_due(clock.peek())) {
      ++statuses;
      s.status_sent(clock.peek());
    }
    EXPECT_EQ(s.wake_at(), clock.peek() + 900ms) << "a pass, not a ping, is what the wait waits for";
    clock.advance(900ms);
  }
  EXPECT_EQ(pings, 3) << "at 15, 30 and 45 s, not every pass";
  EXPECT_EQ(statuses, 5) << "at 10, 20, 30, 40 and 50 s";
  PassSchedule none(1s, std::nullopt, clock.peek());
  none.pass_done(clock.peek() + 1h);
  EXPECT_FALSE(none.ping_due(clock.peek() + 1h)) << "no watchdog, no pings";
}

TEST(PassSchedule, AReloadedIntervalAppliesFromTheNextPass) {
  ManualClock clock;
  PassSchedule s(1s, std::nullopt, clock.peek());
  s.pass_done(clock.peek());
  s.set_interval(5s);
  EXPECT_EQ(s.wake_at(), clock.peek() + 1s) << "the pass already scheduled keeps its time";
  clock.advance(1s);
  s.pass_done(clock.peek());
  EXPECT_EQ(s.wake_at(), clock.peek() + 5s);
}

}  // namespace
}  // namespace memcg::exporter
