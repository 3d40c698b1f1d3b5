// Removed cgroups, kept a while. A container OOM-killed and removed between
// two scrapes takes its series with it, and Prometheus never sees the kill
// (cAdvisor's container_oom_events_total, cadvisor#3015). The collector
// buries every cgroup it drops: its identity (with the container record of
// that moment), its rule and its last event counters, which are the ones
// read when the kernel raised the event. The exposition serves their
// counters, marked by memcg_cgroup_removed_timestamp_seconds, for
// metrics.removed_retention; at most metrics.removed_max are kept, the
// oldest dropped first and counted. Gauges are not kept: the memory is freed.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "plugin/cgroup_table.h"
#include "plugin/clock.h"
#include "plugin/snapshot.h"

namespace memcg {

class Tombstones {
 public:
  // `e` was dropped at `now` (`wall` on the wall clock); `record`: its
  // container's record then, or null. A cgroup never probed has nothing to keep.
  void bury(const CgroupEntry& e, const runtime::ContainerRecord* record, TimePoint now, WallTime wall);
  // Drops those removed `retention` or longer before `now`, then the oldest
  // beyond `max` (counted in dropped()).
  void expire(TimePoint now, Duration retention, uint64_t max);
  // Views of those kept, oldest first (null when none); built again only
  // after a change, so an unchanged set is shared by every snapshot.
  std::shared_ptr<const std::vector<CgroupView>> views();
  size_t size() const noexcept { return kept_.size(); }
  uint64_t dropped() const noexcept { return dropped_; }

 private:
  struct Kept {
    std::shared_ptr<const CgroupId> id;
    std::shared_ptr<const config::Settings> settings;
    std::shared_ptr<const MemoryEvents> events;
    TimePoint at{};
    WallTime wall{};
  };
  std::deque<Kept> kept_;  // oldest first
  uint64_t dropped_ = 0;
  // The views and the ids and rules they point to.
  struct Built {
    std::vector<CgroupView> views;
    std::vector<Kept> owners;
  };
  std::shared_ptr<const Built> built_;
  bool changed_ = false;
};

}  // namespace memcg
