// The quiet lane: what a pass needs of a cgroup that was quiet at its last
// probe and that the flush decision then left alone, in one compact record
// per cgroup: the memory.current descriptor, the bytes that probe read, the
// one-minute high's bucket it was observed in, and the time its max_age
// read comes due (and on a host with swap, memory.swap.current's descriptor
// and bytes too). A later pass that reads the same bytes in the same bucket
// before that time knows, without looking at the cgroup's entry, what the
// probe and the decision would conclude: no change, nothing moved, no read.
// The same bytes in a new bucket still spare the parse, the comparisons
// and the decision: only the one-minute high looks at the entry. At the due
// time the quiet probe's result is taken as it stands and the decision is
// made in full. A cgroup probed quiet and then read (for max_age, most of
// them) takes its record again at once, with the new due time
// (Collector::rejoin_lane), instead of a pass later.
// Most cgroups most passes (the systemd guest: a sleeping process in most
// of its 747 leaves) then cost the pass a pread, a compare and a few stores,
// not the few hundred instructions of the probe and the decision walking
// the entry's fields (docs/performance.md).
//
// The record holds only while nothing else could change the answer; the
// collector drops it (Collector::read_all_ahead, probe_all, decide,
// mark_forced, run_event_pass) whenever something does, every record when
// the table, the configuration or the host's swap changed, and leaves the
// lane closed for a pass in which time did not advance.
#pragma once

#include <cstdint>
#include <vector>

#include "plugin/cache/flush_policy.h"
#include "plugin/cgroup_table.h"
#include "plugin/clock.h"

namespace memcg {

struct QuietLane {
  int fd = -1;     // memory.current's kept descriptor; -1: not in the lane
  ValueText text;  // what the last probe read from it, zero past its length
  // memory.swap.current's, on a host with swap: read and compared as well
  // (-1: no swap to read, known to stay 0 or no file and none seen).
  int swap_fd = -1;
  ValueText swap_text;
  int64_t bucket = 0;  // cache::WindowMax bucket that probe observed the value in
  TimePoint due{};     // cache::max_age_due of the cgroup's last read
};

// Whether `e`, probed quiet in this pass (at `now`, in one-minute-high
// bucket `bucket`) and left alone by the flush decision `in` made of it,
// may join the lane: every condition CgroupReader::is_quiet and
// cache::decide_flush look at that a pass in the lane will not look at
// again, checked here once. A pure function of the entry.
bool quiet_lane_eligible(const CgroupEntry& e, const cache::FlushInput& in, bool host_swap) noexcept;
// The memory.swap.current descriptor the lane reads for an eligible `e`:
// -1 where the probe reads none (swap known to stay 0, or no file).
int quiet_lane_swap_fd(const CgroupEntry& e, bool host_swap) noexcept;

class QuietLanes {
 public:
  // At the start of a pass: whether the lane may be used, given what the
  // records were made under. Forgets them all if the table (its
  // generation), the host's swap or the configuration (its generation: the
  // lookahead and rules in every due time) changed, and for this pass if time did not advance.
  bool open(uint64_t generation, size_t n, bool host_swap, uint64_t config, TimePoint now);
  // The lane's record for entry i, if it has one (of any bucket).
  const QuietLane* find(size_t i) const noexcept {
    const QuietLane& l = lanes_[i];
    return l.fd >= 0 ? &l : nullptr;
  }
  void take(size_t i, const QuietLane& l) noexcept { lanes_[i] = l; }
  void rebucket(size_t i, int64_t bucket) noexcept { lanes_[i].bucket = bucket; }
  void drop(size_t i) noexcept {
    if (i < lanes_.size()) lanes_[i].fd = -1;
  }
  void clear() noexcept { lanes_.clear(); }
  size_t size() const noexcept { return lanes_.size(); }

 private:
  std::vector<QuietLane> lanes_;
  uint64_t generation_ = 0;
  bool host_swap_ = false;
  uint64_t config_ = 0;
  TimePoint last_now_ = TimePoint::min();
};

}  // namespace memcg
