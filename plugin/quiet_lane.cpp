#include "plugin/quiet_lane.h"

#include "plugin/cgroup_reader.h"

namespace memcg {

bool quiet_lane_eligible(const CgroupEntry& e, const cache::FlushInput& in, bool host_swap) noexcept {
  const ProbeValues& p = e.probe;
  // The quiet probe's results, which a pass in the lane leaves as they are:
  // a rate of 0 (set by a quiet probe after an earlier one), the bytes
  // compared, and swap: none to read (known to stay 0, or no file and none
  // seen) or its bytes compared too (quiet_lane_swap_fd).
  if (!e.has_probe || e.gone || !p.current || !p.current_rate || *p.current_rate != 0.0) return false;
  if (!e.file(FileKind::current).valid() || e.probed_current.len < 0) return false;
  const bool swap_zero = CgroupReader::swap_known_zero(e, host_swap);
  const bool swap_none = !e.file(FileKind::swap_current).valid() && !p.swap;
  const bool swap_compared = e.file(FileKind::swap_current).valid() && p.swap && e.probed_swap.len >= 0;
  if (!swap_zero && !swap_none && !swap_compared) return false;
  // Event files: polled (read only when the kernel flags them; a cgroup
  // with a flagged file leaves the lane for that pass) and nothing owed
  // from a wake-up.
  if (!e.events_polled || e.events_changed_owed || e.events_notable_owed) return false;
  // The decision's inputs a quiet pass leaves alone: read before, under the
  // threshold (a quiet pass adds nothing to pending), no event, not forced;
  // max_age is the lane's due time.
  return in.last_read && in.pending < in.threshold && !in.events_moved && !in.forced;
}

int quiet_lane_swap_fd(const CgroupEntry& e, bool host_swap) noexcept {
  return CgroupReader::swap_known_zero(e, host_swap) ? -1 : e.file(FileKind::swap_current).get();
}

bool QuietLanes::open(uint64_t generation, size_t n, bool host_swap, uint64_t config, TimePoint now) {
  if (lanes_.size() != n || generation != generation_ || host_swap != host_swap_ || config != config_) {
    lanes_.assign(n, QuietLane{});
    generation_ = generation;
    host_swap_ = host_swap;
    config_ = config;
  }
  // A pass at the same time as the last (a manual clock) would not set a
  // quiet probe's rate as the probe does: that pass takes the long way.
  const bool advanced = now > last_now_;
  last_now_ = now;
  return advanced;
}

}  // namespace memcg
