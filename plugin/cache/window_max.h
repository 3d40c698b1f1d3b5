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
    else return;
    memo_bucket_ = kNoMemo;
  }
  // The highest value observed in the window that ends at `at`; 0 if none.
  // Remembered until a slot changes: a quiet cgroup's probe, the same value
  // in the same bucket pass after pass, asks again without the six-slot
  // scan (about 60 of its user-space instructions under callgrind,
  // BM_QuietPassPolled).
  uint64_t max(At at) noexcept {
    if (at.bucket == memo_bucket_) return memo_;
    uint64_t out = 0;
    for (const Slot& s : slots_)
      if (s.bucket > at.bucket - static_cast<int64_t>(kBuckets) && s.bucket <= at.bucket && s.max > out) out = s.max;
    memo_bucket_ = at.bucket;
    memo_ = out;
    return out;
  }
  void observe(TimePoint now, uint64_t value) noexcept { observe(at(now), value); }
  uint64_t max(TimePoint now) noexcept { return max(at(now)); }

 private:
  static int64_t bucket_of(TimePoint t) noexcept { return t.time_since_epoch() / kBucket; }
  struct Slot {
    int64_t bucket = -1;
    uint64_t max = 0;
  };
  static constexpr int64_t kNoMemo = INT64_MIN;  // no time's bucket
  std::array<Slot, kBuckets> slots_{};
  int64_t memo_bucket_ = kNoMemo;
  uint64_t memo_ = 0;
};

}  // namespace memcg::cache
