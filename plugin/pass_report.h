// What one collection pass tells the daemon (PassReport), and the totals since
// start that become counters (Counters): the parts of the collector add to
// both, and the collector publishes the totals with each snapshot.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "plugin/cache/flush_policy.h"
#include "plugin/cgroup_files.h"
#include "plugin/error.h"
#include "plugin/histogram.h"

namespace memcg {

// Cgroups the last rescan found but does not collect, by why: the fd budget
// had no room for them, or the kernel refused the descriptors (EMFILE,
// ENFILE, ENOMEM). collector.max_cgroups is counted apart (`limited`).
struct LeftOut {
  uint64_t fd_budget = 0;      // no room under RLIMIT_NOFILE
  uint64_t memory_budget = 0;  // no room under the daemon's own memory limit
  uint64_t fds_exhausted = 0;  // the kernel refused a descriptor
  uint64_t total() const noexcept { return fd_budget + memory_budget + fds_exhausted; }
  bool operator==(const LeftOut&) const = default;
};

struct PassReport {
  uint64_t pass = 0;        // its number (Snapshot::pass of a snapshot built after it)
  size_t cgroups = 0;       // collected at its end
  Duration duration{0};     // from its start to its end (Snapshot::pass_duration)
  bool rescanned = false;
  bool walk_skipped = false;     // the rescan trusted cgroup.stat's count and did not walk
  bool root_ok = true;           // false: the root could not be opened at the last rescan
  size_t added = 0, removed = 0;  // cgroups that appeared / went away this pass
  uint64_t reads = 0, skips = 0;
  uint64_t limited = 0;          // cgroups over max_cgroups at the last rescan
  LeftOut left_out;              // cgroups without room for their fds at the last rescan
  uint64_t unwatched = 0;        // collected cgroups whose limit files are not watched (limits read every limits_max_age)
  int watch_error = 0;           // the errno of the last watch refused
  uint64_t max_age_violations = 0;  // reads the budget deferred past max_age this pass
  std::vector<IoError> errors;   // real I/O errors (not churn), at most kMaxErrors
  static constexpr size_t kMaxErrors = 16;

  void add_error(IoError e) {
    if (errors.size() < kMaxErrors) errors.push_back(std::move(e));
  }
};

struct Counters {
  std::array<uint64_t, kFileKindCount> read_errors{}, parse_errors{};  // by file
  std::array<uint64_t, kFileKindCount> file_reads{};  // every read of a cgroup file the reader made, by file
  std::array<uint64_t, cache::kReadReasonCount> reads{};               // memory.stat reads by reason
  uint64_t skips = 0;     // probes that served cached memory.stat values
  uint64_t deferred = 0;  // reads the read budget postponed (also skips)
  uint64_t stat_unchanged = 0;  // memory.stat reads whose bytes were the last read's: not parsed again
  uint64_t rescans_walked = 0, rescans_counted = 0;  // rescans that walked the tree / that cgroup.stat's count spared
  // Wake-ups between passes because the kernel flagged an event file, and
  // the cgroups whose event files they read.
  uint64_t event_wakeups = 0, event_wakeup_reads = 0;
  // Kill events of removed cgroups that their own reads missed, given back
  // to them from their parent's count, or left to the parent's count alone
  // (removed_kills.h).
  uint64_t kills_recovered = 0, kills_unattributed = 0;
  // Probes that found a cgroup's usage files byte for byte as before and
  // nothing flagged (CgroupReader::probe_quiet). Not exported: the tests and
  // benchmarks check with it that the quiet path is the one taken.
  uint64_t quiet_probes = 0;
  uint64_t lane_probes = 0;  // of which the quiet lane settled (quiet_lane.h); not exported either
  ReadHistogram read_seconds;
  PassHistogram pass_seconds;
  // CPU time of the collector thread by phase (CLOCK_THREAD_CPUTIME_ID): what
  // the daemon costs, decomposed (memcg_exporter_cpu_seconds_total). wait is
  // the thread between two passes, what no phase of its own counts: going to
  // sleep and waking up, the pass's log and systemd notifications, reloads.
  Duration rescan_cpu{0}, probe_cpu{0}, read_cpu{0}, wait_cpu{0};
};

}  // namespace memcg
