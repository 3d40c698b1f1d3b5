// When the daemon loop runs its next pass and when it pings systemd's
// watchdog from its wait: pure decisions over times it is given, so tests
// drive them with a ManualClock (tests/unit/schedule_test.cpp) and the loop
// only sleeps until wake_at().
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

#include "plugin/clock.h"

namespace memcg::exporter {

class PassSchedule {
 public:
  // `watchdog`: systemd's WatchdogSec when it asked for pings.
  PassSchedule(Duration interval, std::optional<Duration> watchdog, TimePoint now) noexcept
      : interval_(interval), watchdog_(watchdog), next_(now), last_ping_(now) {}

  // A pass ended at `now`. The next one is due an interval after the
  // previous deadline, so passes keep their rhythm; when the pass overran
  // that, the next is due now rather than back to back catching up, and the
  // overrun is counted.
  void pass_done(TimePoint now) noexcept {
    next_ += interval_;
    if (next_ < now) {
      next_ = now;
      ++fell_behind_;
    }
  }

  // Until when the loop may wait: the next pass, or earlier when the
  // watchdog needs a ping first (half its interval after the last).
  TimePoint wake_at() const noexcept {
    if (watchdog_ && last_ping_ + *watchdog_ / 2 < next_) return last_ping_ + *watchdog_ / 2;
    return next_;
  }
  bool pass_due(TimePoint now) const noexcept { return now >= next_; }
  // After a pass or woken before one: ping when the watchdog's half interval
  // is up. Not every pass: each ping is a datagram systemd takes in, and a
  // 1 s pass under the unit's WatchdogSec=30s needs one in fifteen.
  bool ping_due(TimePoint now) const noexcept { return watchdog_ && now >= last_ping_ + *watchdog_ / 2; }
  // At the end of a pass (after pass_done): whether to ping now. When a
  // ping falls due before the next pass starts, so that the wait never
  // wakes up only to ping a few milliseconds after a pass that could have
  // sent it; and with a status line (`status_too`), which is a datagram
  // anyway. Pings still come at most half the watchdog interval apart, and
  // the loop wakes up between passes for one only when passes are further
  // apart than that.
  bool ping_after_pass(TimePoint now, bool status_too) const noexcept {
    return watchdog_ && (status_too || ping_due(std::max(now, next_)));
  }
  void pinged(TimePoint now) noexcept { last_ping_ = now; }

  // The STATUS= line `systemctl status` shows: refreshed at most every
  // kStatusEvery (with a ping when one is due), not after every pass.
  static constexpr Duration kStatusEvery = std::chrono::seconds(10);
  bool status_due(TimePoint now) const noexcept { return !status_sent_ || now >= last_status_ + kStatusEvery; }
  void status_sent(TimePoint now) noexcept {
    last_status_ = now;
    status_sent_ = true;
  }

  // Event wake-ups between passes (the kernel flagged an event file): at
  // most one every kEventSpacing, the kernel's own limit per file
  // (CGROUP_FILE_NOTIFY_MIN_INTV, 10 ms). A cgroup held at memory.high raises
  // memory.events that often; a wake-up then costs a scan of the flags and
  // one read (Collector::run_event_pass publishes only OOM kills), and a
  // container removed a few milliseconds after its kill is still read first.
  static constexpr Duration kEventSpacing = std::chrono::milliseconds(10);
  bool events_watched(TimePoint now) const noexcept { return now >= last_event_ + kEventSpacing; }
  TimePoint events_watched_at() const noexcept { return last_event_ + kEventSpacing; }
  void event_woken(TimePoint now) noexcept { last_event_ = now; }
  // Wake-ups for a cgroup's last exit (its cgroup.events flagged): at most
  // one a millisecond. Not the events' 10 ms: the runtime may remove the
  // cgroup a few milliseconds after the exit, and its event files must be
  // read before that; the bound keeps a tenant that makes its cgroups'
  // tasks come and go from waking the collector more often than that.
  static constexpr Duration kExitSpacing = std::chrono::milliseconds(1);
  bool exits_watched(TimePoint now) const noexcept { return now >= last_exit_ + kExitSpacing; }
  TimePoint exits_watched_at() const noexcept { return last_exit_ + kExitSpacing; }
  void exit_woken(TimePoint now) noexcept { last_exit_ = now; }

  // A reload may change the probe interval: from the next pass on.
  void set_interval(Duration interval) noexcept { interval_ = interval; }

  TimePoint next_pass() const noexcept { return next_; }
  uint64_t fell_behind() const noexcept { return fell_behind_; }  // passes that overran their interval

 private:
  Duration interval_;
  std::optional<Duration> watchdog_;
  TimePoint next_, last_ping_, last_event_{}, last_exit_{}, last_status_{};
  bool status_sent_ = false;
  uint64_t fell_behind_ = 0;
};

}  // namespace memcg::exporter
