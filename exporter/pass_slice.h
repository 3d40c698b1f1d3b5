// The scheduler slice the collector thread asks for (base/sys/sched_slice.h):
// its passes' own CPU at the 95th percentile, as the kernel advises for a
// periodic task, so that a pass runs to its end once it has the CPU instead
// of being preempted at every tick by busy tasks and paying, at each return,
// for caches the others emptied. A pure decision over the passes it is
// shown (tests/unit/pass_slice_test.cpp); the daemon makes the call.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>

#include "plugin/clock.h"

namespace memcg::exporter {

class PassSlice {
 public:
  static constexpr size_t kWindow = 64;   // the passes the percentile is taken over
  static constexpr size_t kEvery = 16;    // passes between two looks, after the first
  static constexpr size_t kFirst = 8;     // passes before the first request
  static constexpr Duration kMin = std::chrono::microseconds(100), kMax = std::chrono::milliseconds(100);  // the kernel's clamp

  // One pass's CPU (the collector thread's, from the pass's start to its
  // end). A slice to request now, or nothing: asked after kFirst passes,
  // then looked at every kEvery, and changed only when the percentile left
  // [0.8, 1.25] of the slice asked for (a pass that varies does not make
  // the thread ask every look).
  std::optional<Duration> observe(Duration pass_cpu) noexcept {
    cpu_[seen_ % kWindow] = pass_cpu;
    ++seen_;
    if (seen_ < kFirst || (asked_.count() > 0 && (seen_ - kFirst) % kEvery != 0)) return std::nullopt;
    const Duration want = std::clamp(percentile95(), kMin, kMax);
    if (asked_.count() > 0 && want * 5 >= asked_ * 4 && want * 4 <= asked_ * 5) return std::nullopt;
    asked_ = want;
    return want;
  }
  Duration asked() const noexcept { return asked_; }

 private:
  Duration percentile95() const noexcept {
    const size_t n = std::min(seen_, kWindow);
    std::array<Duration, kWindow> v{};
    std::copy_n(cpu_.begin(), n, v.begin());
    const size_t at = std::min(n - 1, (n * 95 + 99) / 100 - 1);  // nearest rank
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(n));
    return v[at];
  }

  std::array<Duration, kWindow> cpu_{};
  size_t seen_ = 0;
  Duration asked_{0};
};

}  // namespace memcg::exporter
