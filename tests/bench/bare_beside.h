// The bare memory.current loop run beside a daemon, in the daemon's own
// window (memcg-cost): a thread of the measuring process reads every
// memory.current once a second on kept-open fds while the daemon runs.
//
// Why beside and not only after: the guest's speed drifts between windows
// of one boot (the bare loop taken in a window of its own moved by up to
// 15 % between two windows, and a daemon window ran slower in every phase at
// once while the bare window after it did not), so a ratio of two windows
// carries that drift. Two loops in one window meet the same guest: the
// same busy workloads, the same scheduler, the same moment.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <span>
#include <thread>

#include "tests/bench/thread_cpu.h"

namespace memcg::bench {

class BareBeside {
 public:
  // `fds`: one kept-open memory.current per cgroup, owned by the caller and
  // open until stop().
  explicit BareBeside(std::span<const int> fds) : fds_(fds) {}
  ~BareBeside() { stop(); }
  BareBeside(const BareBeside&) = delete;
  BareBeside& operator=(const BareBeside&) = delete;

  // Ticks once a second from `t0` plus half a second (the daemon's passes
  // and scrapes keep their own times; the half second keeps the loop's
  // ticks off the scrapes, which memcg-cost makes on whole seconds).
  void start(std::chrono::steady_clock::time_point t0) {
    thread_ = std::thread([this, t0] { run(t0); });
  }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  size_t cgroups() const noexcept { return fds_.size(); }
  int ticks() const noexcept { return ticks_; }
  // Microseconds per cgroup per second: the reads alone, between the loop's
  // wake-up and its sleep, as the bare loop of a window of its own.
  double us() const noexcept {
    return ticks_ > 0 && !fds_.empty() ? cpu_ / static_cast<double>(fds_.size()) / ticks_ * 1e6 : 0;
  }
  // Involuntary context switches during the reads, per tick.
  double preemptions_per_tick() const noexcept { return ticks_ > 0 ? static_cast<double>(preempted_) / ticks_ : 0; }

 private:
  void run(std::chrono::steady_clock::time_point t0) {
    char buf[64];
    for (int tick = 0; !stop_.load(); ++tick) {
      std::this_thread::sleep_until(t0 + std::chrono::milliseconds(500 + 1000 * tick));
      if (stop_.load()) break;
      rusage r0{}, r1{};
      getrusage(RUSAGE_THREAD, &r0);
      const double c0 = thread_cpu_seconds();
      for (int fd : fds_) (void)!pread(fd, buf, sizeof buf, 0);
      cpu_ += thread_cpu_seconds() - c0;
      getrusage(RUSAGE_THREAD, &r1);
      preempted_ += r1.ru_nivcsw - r0.ru_nivcsw;
      ++ticks_;
    }
  }

  std::span<const int> fds_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  double cpu_ = 0;  // written by the loop's thread, read after stop()
  int ticks_ = 0;
  long preempted_ = 0;
};

}  // namespace memcg::bench
