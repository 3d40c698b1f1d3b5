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

  // Where a time falls: its bucket and that bucket's slot. Two 64-bit
  // divisions, which a probe of every cgroup at the same `now` computes
  // once per pass rather than twice per cgroup.
  struct At {
    int64_t bucket;
    size_t slot;
  };
  static At at(TimePoint now) noexcept {
    const int64_t b = bucket_of(now);
    return {b, static_cast<size_t>(b % static_cast<int64_t>(kBuckets))};
  }

  void observe(At at, uint64_t value) noexcept {
    Slot& s = slots_[at.slot];
    if (s.bucket != at.bucket) s = {at.bucket, value};
    else if (value > s.max) s.max = value;
  }
  // The highest value observed in the window that ends at `at`; 0 if none.
  uint64_t max(At at) const noexcept {
    uint64_t out = 0;
    for (const Slot& s : slots_)
      if (s.bucket > at.bucket - static_cast<int64_t>(kBuckets) && s.bucket <= at.bucket && s.max > out) out = s.max;
    return out;
  }
  void observe(TimePoint now, uint64_t value) noexcept { observe(at(now), value); }
  uint64_t max(TimePoint now) const noexcept { return max(at(now)); }

 private:
  static int64_t bucket_of(TimePoint t) noexcept { return t.time_since_epoch() / kBucket; }
  struct Slot {
    int64_t bucket = -1;
    uint64_t max = 0;
  };
  std::array<Slot, kBuckets> slots_{};
};

}  // namespace memcg::cache
