// Which files a memory.stat read takes along. memory.stat is what max_age
// bounds; the limits, memory.peak and memory.pressure change more rarely, and
// re-reading all three with every max_age read of a quiet cgroup cost the
// re-read more than the daemon's own work (two extra preads per read, and
// the limits' five). A pure function of the cgroup's state and `now`.
#pragma once

#include <optional>

#include "plugin/cache/flush_policy.h"
#include "plugin/clock.h"

namespace memcg::cache {

struct CompanionInput {
  ReadReason reason = ReadReason::initial;
  // When each was last read; nullopt: never (or the cgroup has no record).
  std::optional<TimePoint> limits_at, peak_at, pressure_at;
  // A probe saw memory.current, swap.current or memory.events change since
  // memory.peak was last read: usage may have set a new peak.
  bool moved_since_peak = true;
  // The probe of this pass read memory.pressure (it does whenever the cgroup
  // moved): it is fresh already.
  bool pressure_probed = false;
  // The kernel tells when a limit file is written (inotify watches,
  // cgroupfs/file_watch.h), and whether one was since the limits were
  // last read.
  bool limits_watched = false, limits_changed = false;
  // When systemd-oomd's record (the directory's xattrs) was last read.
  std::optional<TimePoint> oomd_at;
  Duration max_age{};  // collector.limits_max_age: the bound for all of them
};

struct CompanionReads {
  bool limits = true, peak = true, pressure = true, oomd = true;
};

// Limits: at most every max_age, at once when the read is about a limit (a
// high/max/OOM event) or asked for (initial, forced); where the files are
// watched, the max_age read only if one was written since the last read
// (the limits read then are still what the files say: nothing wrote them).
// systemd-oomd's record: every max_age (no watch can tell its setxattr
// without slowing every read of the directory's files), or with everything.
// memory.peak: whenever usage moved since its last read (a peak only rises
// with usage), else at least every max_age, since a spike between two probes
// that returns to the same byte count is invisible to them. memory.pressure: the probe reads it
// whenever the cgroup moves, so here only when the probe did not and it is
// max_age old (a stall with no change in usage: rare, bounded). An event,
// forced or initial read takes everything along.
CompanionReads decide_companions(const CompanionInput& in, TimePoint now) noexcept;

}  // namespace memcg::cache
