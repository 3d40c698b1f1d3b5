// The highest value a cgroup's probes saw over the last minute: what a
// scrape every 15 s or more misses of a spike between two scrapes. Six
// buckets of ten seconds, each the highest value probed in it: the window
// is the minute up to the current bucket (50 to 60 s), with no per-sample
// storage. A pure function of the times it is given.
#pragma once

#include <array>
#include <cstdint>

#include "plugin/clock.h"

namespace memcg::cache {

class WindowMax {
 public:
  static constexpr Duration kBucket = std::chrono::seconds(10);
  static constexpr size_t kBuckets = 6;
  static constexpr Duration kWindow = kBucket * static_cast<int>(kBuckets);

  void observe(TimePoint now, uint64_t value) noexcept {
    const int64_t b = bucket_of(now);
    Slot& s = slots_[static_cast<size_t>(b % static_cast<int64_t>(kBuckets))];
    if (s.bucket != b) s = {b, value};
    else if (value > s.max) s.max = value;
  }
  // The highest value observed in the window that ends at `now`; 0 if none.
  uint64_t max(TimePoint now) const noexcept {
    const int64_t b = bucket_of(now);
    uint64_t out = 0;
    for (const Slot& s : slots_)
      if (s.bucket > b - static_cast<int64_t>(kBuckets) && s.bucket <= b && s.max > out) out = s.max;
    return out;
  }

 private:
  static int64_t bucket_of(TimePoint t) noexcept { return t.time_since_epoch() / kBucket; }
  struct Slot {
    int64_t bucket = -1;
    uint64_t max = 0;
  };
  std::array<Slot, kBuckets> slots_{};
};

}  // namespace memcg::cache
