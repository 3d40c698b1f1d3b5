// When to re-read memory.stat: the userspace twin of the kernel's
// memcg_vmstats_needs_flush() plus its periodic flush (mm/memcontrol.c).
// A pure function of the cgroup's cache state, the new probe and `now`.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "plugin/clock.h"

namespace memcg::cache {

// Why memory.stat was read. When several apply, the first in this order is
// recorded: a first read is always `initial`; a measured change beats an
// event beats age; `forced` only counts reads nothing else asked for.
enum class ReadReason : unsigned char { initial, threshold, event, max_age, forced };
inline constexpr size_t kReadReasonCount = 5;
inline constexpr std::array<ReadReason, kReadReasonCount> kReadReasons{
    ReadReason::initial, ReadReason::threshold, ReadReason::event, ReadReason::max_age, ReadReason::forced};
std::string_view to_string(ReadReason r) noexcept;

struct FlushInput {
  std::optional<TimePoint> last_read;  // nullopt: never read
  uint64_t pending = 0;                // probed change since the last read (bytes)
  uint64_t threshold = 0;              // 0: read every pass (the naive mode)
  Duration max_age{};
  // Time until the next pass (the probe interval). A value must not exceed
  // max_age at any moment, including just before that pass, so the read is
  // due once age + lookahead reaches max_age.
  Duration lookahead{};
  // Brings the first max_age refresh forward by this much (a per-cgroup phase
  // in [0, max_age)), so cgroups first read together do not all come due at
  // the same pass forever after. 0 after the first refresh.
  Duration phase{};
  bool events_moved = false;           // memory.events high/max/oom/oom_kill/oom_group_kill moved
  bool forced = false;                 // a refresh was requested
};

// Inline: the collector asks it for every cgroup every pass, and most
// answers are "not yet" from fields it has at hand; in the caller's loop the
// input need not be built in memory (about 40 of a cgroup's ~230
// instructions in decide() and propagation under callgrind,
// BM_QuietPassPolled).
inline std::optional<ReadReason> decide_flush(const FlushInput& in, TimePoint now) noexcept {
  if (!in.last_read) return ReadReason::initial;
  if (in.pending >= in.threshold) return ReadReason::threshold;
  if (in.events_moved) return ReadReason::event;
  if (now - *in.last_read + in.lookahead + in.phase >= in.max_age) return ReadReason::max_age;
  if (in.forced) return ReadReason::forced;
  return std::nullopt;
}

// The first `now` at which decide_flush(in, now) says max_age, for an `in`
// read before (last_read set): its condition solved for now, exactly in
// integer nanoseconds, and TimePoint::max() where max_age reaches past the
// clock's range (a rule's max_age may be centuries). The quiet lane
// (quiet_lane.h) compares one time instead of asking again every pass.
// `from` is negative when the steady clock is younger than lookahead + phase
// (just after boot), so the headroom check is on the sign of `from`: only a
// positive `from` can push from + max_age past the range.
inline TimePoint max_age_due(const FlushInput& in) noexcept {
  const TimePoint from = *in.last_read - in.lookahead - in.phase;
  const Duration since_epoch = from.time_since_epoch();
  if (since_epoch > Duration::zero() && in.max_age > Duration::max() - since_epoch) {
    return TimePoint::max();
  }
  return from + in.max_age;
}

// A deterministic phase in [0, span) for a cgroup (by inode): max_age
// refreshes of many cgroups spread evenly over time instead of in one burst.
Duration refresh_phase(uint64_t inode, Duration span) noexcept;

}  // namespace memcg::cache
