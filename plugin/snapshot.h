// The immutable result of a collection pass. The collector builds one per pass
// and publishes it with one atomic store; readers (scrapes, the JSON API) load
// it and compute ages against their own `now`. Per-cgroup identity, settings
// and memory.stat records are shared between snapshots, so publishing a pass
// copies pointers, not stat tables.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "plugin/cgroup_files.h"
#include "plugin/cgroupfs/kernel_facts.h"
#include "plugin/cache/flush_policy.h"
#include "plugin/clock.h"
#include "plugin/histogram.h"
#include "plugin/memory_events.h"
#include "plugin/pass_report.h"
#include "base/parse/psi.h"
#include "base/parse/single_value.h"
#include "base/parse/stat_keys.h"
#include "plugin/runtime/identity.h"
#include "plugin/runtime/oci_record.h"
#include "plugin/runtime/engine_stats.h"
#include "plugin/runtime/record_binding.h"

namespace memcg {


// The limit files of cgroup_files.h, in its order (checked below): code
// that means one limit names it here; the rest iterates kLimitFiles.
enum LimitKind : unsigned char { lim_min, lim_low, lim_high, lim_max, lim_swap_max, lim_count };
static_assert(lim_count == kLimitFileCount);
static_assert(kLimitFiles[lim_min] == FileKind::min && kLimitFiles[lim_low] == FileKind::low &&
              kLimitFiles[lim_high] == FileKind::high && kLimitFiles[lim_max] == FileKind::max &&
              kLimitFiles[lim_swap_max] == FileKind::swap_max);
// The limit's label: "min", ..., "swap_max" (the table's).
constexpr std::string_view limit_name(LimitKind k) noexcept { return cgroup_file(kLimitFiles[k]).label; }

struct CgroupId {
  std::string path;  // relative to the cgroup2 root; "/" for the root
  uint64_t inode = 0;
  int depth = 0;
  runtime::Identity identity;  // from the path, at discovery
  // A removed cgroup's (tombstones.h): the record of its container when it
  // went, which the runtime has usually dropped by now.
  std::shared_ptr<const runtime::ContainerRecord> last_record = nullptr;
};

// One memory.stat read and the files read with it (limits and peak change
// rarely or only matter with the breakdown, so they share its freshness).
struct StatRecord {
  TimePoint read_at{};
  WallTime read_at_wall{};  // the same instant on the wall clock, exported as a Unix timestamp
  // What memory.stat said, never null. Immutable and shared: a re-read that
  // returns the same bytes makes a record that shares its predecessor's
  // values (a reference, not a copy of ~600 bytes), and the next record
  // keeps them as its previous read's (prev_values).
  std::shared_ptr<const parse::StatValues> values = empty_stat_values();
  // The bytes `values` were parsed from, as a keyed digest (base/text/
  // digest.h) and a length, with the malformed lines they held: a re-read
  // that returns the same bytes keeps the values without parsing them
  // (CgroupReader::take_stat_values). text_len 0: no digest (an empty read, a
  // record not made by a read).
  uint64_t text_digest = 0;
  uint32_t text_len = 0;
  uint32_t malformed = 0;
  // The previous read's values, for the per-second rates: computed when asked
  // (the full profile, the JSON API), not with every read. Null, and
  // since_prev 0: no previous read (the first, or the cgroup was recreated).
  std::shared_ptr<const parse::StatValues> prev_values;
  Duration since_prev{0};
  // Per second against the previous read: events as a counter (a reset is
  // never negative), bytes as a signed derivative; nullopt for keys that are
  // counts, or missing from either read, or without a previous read.
  std::optional<double> rate(size_t k) const noexcept;
  std::array<std::optional<parse::SingleValue>, lim_count> limits;
  TimePoint limits_read_at{};  // limits are read at most every collector.limits_max_age
  std::optional<uint64_t> peak;  // since the cgroup was created (the kernel's watermark)
  TimePoint peak_at{};  // memory.peak is read when usage moved, else at most every collector.limits_max_age
  // Where the kernel resets memory.peak per open file (6.12+) and the daemon
  // may write it: each read resets it (peak_reset), so the next read is the
  // highest usage since this one (peak_since_last, fed to the one-minute
  // high) and `peak` keeps the highest of all.
  bool peak_reset = false;
  std::optional<uint64_t> peak_since_last;

  // The values every record starts with: none present.
  static std::shared_ptr<const parse::StatValues> empty_stat_values();
};

// The cheap files, read every pass.
struct ProbeValues {
  TimePoint at{};
  std::optional<uint64_t> current, swap;
  std::optional<uint64_t> current_max;  // the highest memory.current probed over the last minute (cache/window_max.h)
  // memory.events, .local, swap.events and oomd's counts: replaced, not
  // updated, when one changed (null until memory.events was read: the root).
  std::shared_ptr<const MemoryEvents> events;
  bool has_psi = false;
  parse::Psi psi;
  TimePoint psi_at{};  // when memory.pressure was read (by a probe that saw the cgroup move, or with memory.stat)
  std::optional<double> current_rate;  // bytes/s vs the previous probe
};

// Who the collected cgroups are and which rule each has, in table order:
// rebuilt only when the set or a rule changes and shared by every snapshot
// until then, so a pass publishes them with one reference instead of two
// atomic reference counts per cgroup (and a scrape knows an unchanged set
// by this pointer alone).
struct Roster {
  std::vector<std::shared_ptr<const CgroupId>> ids;
  std::vector<std::shared_ptr<const config::Settings>> settings;
};

struct CgroupView {
  const CgroupId* id = nullptr;                 // owned by the snapshot's roster
  const config::Settings* settings = nullptr;  // likewise
  ProbeValues probe;
  std::shared_ptr<const StatRecord> stat;  // null until a read succeeded
  uint64_t pending = 0;                    // probed change since stat->read_at
  std::array<uint64_t, cache::kReadReasonCount> reads{};
  uint64_t skips = 0;
  Duration read_wall{0}, read_cpu{0};      // summed over all memory.stat reads
  uint64_t max_age_violations = 0;         // passes past max_age because the read budget deferred the read
  WallTime removed_at{};                   // a removed cgroup's tombstone (tombstones.h): when it went; else zero

  // Age of the memory.stat values at `now`, or nullopt if never read.
  std::optional<Duration> stat_age(TimePoint now) const noexcept {
    if (!stat) return std::nullopt;
    return now - stat->read_at;
  }
};

struct Snapshot {
  uint64_t pass = 0;       // 0: no pass completed yet
  uint64_t publication = 0;  // every snapshot published: passes and event wake-ups
  TimePoint taken_at{};    // start of the pass
  Duration pass_duration{0};
  std::string root;
  std::vector<CgroupView> cgroups;  // pre-order by path
  std::shared_ptr<const Roster> roster;  // keeps every view's id and settings alive

  // Appends a view of `id` under `settings` and a new roster that holds them
  // (snapshots made by hand: tests, the series budget; the collector shares
  // one roster between its snapshots instead).
  CgroupView& add_cgroup(std::shared_ptr<const CgroupId> id, std::shared_ptr<const config::Settings> settings);
  WallTime taken_at_wall{};         // the end of the pass, on the wall clock
  WallTime last_rescan_wall{};      // the last rescan that could read the root
  bool root_ok = true;              // the root could be opened at the last rescan
  uint64_t cgroups_limited = 0;     // left out by collector.max_cgroups
  uint64_t cgroups_no_memory = 0;   // directories without the memory controller
  LeftOut left_out;                 // found but without room for their descriptors
  Duration rescan_cpu{0}, probe_cpu{0}, read_cpu{0}, wait_cpu{0};  // collector CPU by phase since start
  uint64_t cgroup_fds = 0;          // descriptors the collected cgroups hold
  uint64_t cgroup_fd_budget = UINT64_MAX;  // ... and may hold (UINT64_MAX: no budget set)
  uint64_t memory_budget = 0;       // the memory limit that budget is held within (0: none)
  uint64_t limits_watched = 0;      // cgroups whose limit files are watched: limits re-read only after a write
  uint64_t events_polled = 0;       // cgroups whose memory.events is read only when the kernel flags a change
  uint64_t event_wakeups = 0, event_wakeup_reads = 0;  // Counters' of the same names
  uint64_t kills_recovered = 0, kills_unattributed = 0;  // likewise
  uint64_t quiet_probes = 0;                           // likewise (not exported)
  uint64_t lane_probes = 0;                            // likewise (not exported)
  std::array<uint64_t, kFileKindCount> read_errors{};   // totals since start
  std::array<uint64_t, kFileKindCount> file_reads{};    // reads of each cgroup file, since start
  std::array<uint64_t, kFileKindCount> parse_errors{};  // malformed files or lines
  std::array<uint64_t, cache::kReadReasonCount> reads{};  // totals since start
  uint64_t skips = 0;
  uint64_t reads_deferred = 0;  // reads the read budget postponed (counted in skips too)
  uint64_t reads_unchanged = 0;  // reads whose bytes were the cgroup's last read's (not parsed again)
  uint64_t rescans_walked = 0, rescans_counted = 0;  // rescans that walked / that cgroup.stat's count spared
  ReadHistogram stat_read_seconds;
  PassHistogram pass_seconds;
  // Container records by id (container name, image, pod, namespace): the OCI
  // hook's and the Engine APIs', each bound to the one cgroup its source
  // owns (runtime/record_binding.h); null when all are off.
  std::shared_ptr<const runtime::BoundRecords> records;
  // Engine API lookups by engine (runtime::kEngines); empty when that one is off.
  std::array<std::optional<runtime::EngineStats>, runtime::kEngineCount> engines;
  std::optional<runtime::ContainerdStats> containerd;  // containers.containerd_socket on
  // The settings in force: [defaults] first, then each rule (per-rule series);
  // null before the first pass.
  std::shared_ptr<const std::vector<std::shared_ptr<const config::Settings>>> rules;

  // One identity label of a cgroup as every output shows it (/metrics, the
  // JSON API, the status page): "cgroup" (the path), what the path says
  // (runtime, container_id, qos_class, unit, pod_uid), and what the
  // container's hook record adds (container_name, image, pod, namespace;
  // pod_uid when the path has none). "" when unknown. Names: config::kIdentityLabels.
  std::string_view identity(const CgroupId& id, std::string_view label) const;

  // The record of the container that IS this cgroup: one bound to exactly
  // this cgroup (a nested look-alike gets path-derived labels only).
  const runtime::ContainerRecord* record_for(const CgroupId& id) const {
    if (id.last_record) return id.last_record.get();
    return records ? runtime::record_for(*records, id.identity.container_id, id.path) : nullptr;
  }
  // Removed cgroups whose counters are still served (tombstones.h): views
  // with the identity and memory.events only, oldest first; null if none.
  std::shared_ptr<const std::vector<CgroupView>> removed;
  uint64_t removed_dropped = 0;  // tombstones dropped before their retention for metrics.removed_max
  // The kernel's flush threshold and features (cgroupfs/kernel_facts.h),
  // found once at start; null when not probed (tests).
  std::shared_ptr<const cgroupfs::KernelFacts> kernel;
  uint64_t peak_reset_cgroups = 0;  // cgroups whose memory.peak the last read reset (StatRecord::peak_reset)
};

}  // namespace memcg
