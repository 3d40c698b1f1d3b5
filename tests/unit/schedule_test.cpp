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

// WatchdogSec=4s and 1 s passes whose ends wander by tens of milliseconds:
// a ping due between two passes is sent by the pass before, so the wait
// sleeps from pass to pass and never wakes up only to ping.
TEST(PassSchedule, PingsRideOnPassesAndStatusLinesInsteadOfWakingTheWait) {
  ManualClock clock;
  PassSchedule s(1s, std::chrono::seconds(4), clock.peek());
  s.status_sent(clock.peek());
  s.pinged(clock.peek());
  TimePoint last_ping = clock.peek();
  int pings = 0, statuses = 0;
  Duration longest{0};
  const Duration lengths[] = {80ms, 20ms, 140ms, 60ms, 10ms};
  for (int pass = 0; pass < 120; ++pass) {  // two minutes
    const TimePoint start = clock.peek();
    clock.advance(lengths[pass % 5]);
    s.pass_done(clock.peek());
    const bool status = s.status_due(clock.peek());
    if (status) {
      ++statuses;
      s.status_sent(clock.peek());
    }
    if (s.ping_after_pass(clock.peek(), status)) {
      ++pings;
      longest = std::max(longest, clock.peek() - last_ping);
      last_ping = clock.peek();
      s.pinged(clock.peek());
    }
    ASSERT_EQ(s.wake_at(), s.next_pass()) << "pass " << pass << ": the wait would wake up for a ping";
    ASSERT_FALSE(s.ping_due(s.next_pass() - 1ns)) << "pass " << pass << ": a ping falls due before the next pass";
    clock.advance(s.next_pass() - clock.peek());
    ASSERT_EQ(clock.peek() - start, 1s);
  }
  EXPECT_LE(longest, 2s + 140ms) << "half the watchdog interval, late by at most a pass";
  EXPECT_GE(pings, 58) << "about one every 2 s";
  EXPECT_LE(pings, 62) << "not one every pass";
  EXPECT_EQ(statuses, 11) << "every 10 s";

  // Under the packaged unit (WatchdogSec=30s) every ping rides on a status line.
  PassSchedule packaged(1s, std::chrono::seconds(30), clock.peek());
  packaged.status_sent(clock.peek());
  packaged.pinged(clock.peek());
  int alone = 0;
  for (int pass = 0; pass < 120; ++pass) {
    clock.advance(50ms);
    packaged.pass_done(clock.peek());
    const bool status = packaged.status_due(clock.peek());
    if (status) packaged.status_sent(clock.peek());
    if (packaged.ping_after_pass(clock.peek(), status)) {
      alone += status ? 0 : 1;
      packaged.pinged(clock.peek());
    }
    clock.advance(packaged.next_pass() - clock.peek());
  }
  EXPECT_EQ(alone, 0) << "no datagram of its own for a ping";
  PassSchedule none(1s, std::nullopt, clock.peek());
  none.pass_done(clock.peek());
  EXPECT_FALSE(none.ping_after_pass(clock.peek(), true)) << "no watchdog, no pings, even with a status";
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
