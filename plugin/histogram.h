// A fixed-bucket histogram of seconds with the bucket bounds in its type.
// Plain data: copied into every snapshot.
#pragma once

#include <array>
#include <cstdint>

namespace memcg {

// memory.stat read time: 1 µs (a cached, tiny tree) to 100 ms (a flush stuck
// behind the global rstat lock on a large host).
inline constexpr std::array<double, 16> kReadSecondsBounds{
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1};
// A whole collection pass: 100 µs (a few cgroups) to 10 s (something is wrong).
inline constexpr std::array<double, 12> kPassSecondsBounds{
    1e-4, 2.5e-4, 1e-3, 2.5e-3, 1e-2, 2.5e-2, 0.1, 0.25, 0.5, 1, 2.5, 10};

template <const auto& Bounds>
struct Histogram {
  static constexpr const auto& bounds = Bounds;  // upper bounds, ascending
  std::array<uint64_t, Bounds.size() + 1> counts{};  // per bucket, not cumulative; last is +Inf
  double sum = 0;
  uint64_t count = 0;

  void observe(double v) noexcept {
    size_t i = 0;
    while (i < Bounds.size() && v > Bounds[i]) ++i;
    ++counts[i];
    sum += v;
    ++count;
  }
};

using ReadHistogram = Histogram<kReadSecondsBounds>;
using PassHistogram = Histogram<kPassSecondsBounds>;

}  // namespace memcg
