// Time, injected. Only the collector loop asks a Clock; everything it decides
// with receives `now` as a parameter, so tests drive it with a ManualClock.
#pragma once

#include <atomic>
#include <chrono>

namespace memcg {

using TimePoint = std::chrono::steady_clock::time_point;  // monotonic: immune to clock jumps
using Duration = std::chrono::nanoseconds;
using WallTime = std::chrono::system_clock::time_point;  // only for exported Unix timestamps

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() noexcept = 0;
  // CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID). The kernel runs
  // the rstat flush of a memory.stat read in the reading thread's context, so
  // this is where that work shows up.
  virtual Duration thread_cpu() noexcept = 0;
  // Wall-clock time, for the Unix timestamps Prometheus wants on events
  // ("when did it happen", not "how long ago"). Never used for decisions.
  virtual WallTime wall() noexcept = 0;

  static Clock& system() noexcept;
};

// A clock that moves only when told to. `step` is added after every now() and
// thread_cpu() call, so a test can give every timed operation a known cost.
// now() and advance() may be called from different threads (a test moving
// the clock of the connection gate's thread); `step` is set before.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint{} + std::chrono::hours(1))
      : now_(start.time_since_epoch().count()), start_(start) {}
  TimePoint now() noexcept override { return TimePoint(Duration(now_.fetch_add(step.count()))); }
  Duration thread_cpu() noexcept override {
    const Duration t = cpu_;
    cpu_ += cpu_step;
    return t;
  }
  // Moves with now(): kWallStart at the clock's start.
  WallTime wall() noexcept override {
    return kWallStart + std::chrono::duration_cast<WallTime::duration>(peek() - start_);
  }
  static constexpr WallTime kWallStart{std::chrono::seconds(1700000000)};  // 2023-11-14T22:13:20Z

  void advance(Duration d) noexcept { now_.fetch_add(d.count()); }
  TimePoint peek() const noexcept { return TimePoint(Duration(now_.load())); }

  Duration step{0};
  Duration cpu_step{0};

 private:
  std::atomic<Duration::rep> now_;
  TimePoint start_;
  Duration cpu_{0};
};

inline double to_seconds(Duration d) noexcept { return std::chrono::duration<double>(d).count(); }
inline double unix_seconds(WallTime t) noexcept {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace memcg
