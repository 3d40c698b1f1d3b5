#include "exporter/exposition/metrics.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <unordered_set>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "base/text/short_bytes.h"
#include "exporter/exposition/cadvisor_metrics.h"
#include "plugin/utf8.h"


// The metric table: the one place every series of the lean, default and
// full profiles is defined (the cadvisor profile's: cadvisor_metrics.cpp).
namespace memcg::exporter {
namespace {

using config::Profile;
using Sink = SampleSink;
using Ctx = ScrapeContext;
using CV = CgroupView;

constexpr double kInf = std::numeric_limits<double>::infinity();

double d(uint64_t v) { return static_cast<double>(v); }

double to_unix_seconds(WallTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// memory.events keys every profile serves: a limit was hit or the OOM
// killer ran. low (reclaimed under protection), oom_group_kill (also counted
// in oom_kill) and sock_throttled are in the full profile.
bool lean_event(size_t k) noexcept {
  return k == parse::ev_high || k == parse::ev_max || k == parse::ev_oom || k == parse::ev_oom_kill;
}

// Every counter of a flat-keyed event file, the kernel's new keys included.
template <size_t N>
void counters(const parse::FlatKeyed<N>& v, const parse::KeyTable& table, SampleSink& s) {
  for (size_t k = 0; k < N; ++k)
    if (auto x = v.get(k)) s.add(d(*x), {{"event", table.name(k)}});
  for (const auto& u : v.unknown) s.add(d(u.value), {{"event", u.name}});
}

// memory.stat keys of one kind that the cgroup's allowlist lets through, in
// the kernel's order: the set bits of three sets intersected, not a test of
// each of the 74 keys per family per cgroup.
template <typename Fn>
void each_stat(const CV& c, parse::StatKind kind, Fn&& fn) {
  if (!c.stat) return;
  const auto& f = c.settings->stats;
  parse::KeySet keys = c.stat->values->present & parse::stat_keys_of(kind);
  if (!f.all) keys &= f.known;
  for (size_t k = keys._Find_first(); k < keys.size(); k = keys._Find_next(k)) fn(k, parse::stat_keys()[k].name);
}

template <const auto& Bounds>
HistogramValue to_value(const Histogram<Bounds>& h) {
  HistogramValue out;
  out.sample_count = h.count;
  out.sample_sum = h.sum;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < Bounds.size(); ++i) {
    cumulative += h.counts[i];
    out.bucket.push_back({cumulative, Bounds[i]});
  }
  out.bucket.push_back({h.count, kInf});
  return out;
}

// Whether a limit differs from the kernel's default: memory.min and low
// protect nothing at 0; high, max and swap.max limit nothing at "max".
bool limit_is_set(LimitKind k, const parse::SingleValue& v) noexcept {
  return k == lim_min || k == lim_low ? v.unlimited || v.value > 0 : !v.unlimited;
}

void per_file(const std::array<uint64_t, kFileKindCount>& counts, Sink& s) {
  for (size_t f = 0; f < kFileKindCount; ++f) s.add(d(counts[f]), {{"file", file_name(static_cast<FileKind>(f))}});
}


// clang-format off
// The cached-value note every memory.stat-derived HELP carries.
#define MEMCG_CACHED " Cached: read at memcg_stat_last_read_timestamp_seconds, never older than the rule's memcg_rule_max_age_seconds."
const MetricDef kTable[] = {
  // --- identity ------------------------------------------------------------
  {"memcg_cgroup_info", Profile::lean, MetricType::Gauge, "cgroup, rule, runtime, container_id, container_name, image, pod, namespace, pod_uid, qos_class, unit",
   "Always 1; labels say what the cgroup is: its path (cgroup), the configuration rule that applies (rule), what its path tells (runtime, ids, pod UID, QoS class, systemd unit) and what a runtime says of the cgroup it owns (names, image, pod, namespace: OCI hook records, the Docker, podman and containerd APIs). Empty labels are left out. Join with * on(cgroup_id) group_left(...).",
   [](const CV& c, const Ctx& x, Sink& s) {
     // Empty values are left out: Prometheus treats them as absent anyway,
     // and for a non-container cgroup they were half of the line.
     SampleSink::Labels& l = s.scratch();
     l.clear();
     // The cadvisor profile keys every series by `id`, the same path with a leading '/'.
     if (x.profile != Profile::cadvisor) l.emplace_back("cgroup", c.id->path);
     l.emplace_back("rule", c.settings->name);
     for (auto name : config::kIdentityLabels)
       if (name != "cgroup")
         if (auto v = x.snap.identity(*c.id, name); !v.empty()) l.emplace_back(name, v);
     s.add_labels(1, l);
   }},
  // --- values -----------------------------------------------------------
  {"memcg_memory_current_bytes", Profile::lean, MetricType::Gauge, "",
   "Memory charged to the cgroup and its descendants (memory.current), read every probe.",
   [](const CV& c, const Ctx&, Sink& s) { if (c.probe.current) s.add(d(*c.probe.current)); }},
  {"memcg_memory_swap_current_bytes", Profile::lean, MetricType::Gauge, "",
   "Swap used by the cgroup and its descendants (memory.swap.current), read every probe.",
   [](const CV& c, const Ctx&, Sink& s) { if (c.probe.swap) s.add(d(*c.probe.swap)); }},
  {"memcg_memory_current_max_1m_bytes", Profile::standard, MetricType::Gauge, "",
   "Highest memory.current the probes saw over the last minute (50-60 s, in 10 s buckets): the spike a scrape interval misses. Where the kernel resets memory.peak per open file (6.12+) and the daemon may write it, also the peak between two memory.stat reads, spikes shorter than a probe included (counted when read, up to max_age later); elsewhere short of what fell between two probes.",
   [](const CV& c, const Ctx&, Sink& s) { if (c.probe.current_max) s.add(d(*c.probe.current_max)); }},
  {"memcg_memory_peak_bytes", Profile::full, MetricType::Gauge, "",
   "Highest memory.current recorded for the cgroup since it was created (memory.peak). Read with memory.stat when a probe saw usage move since its last read (a peak only rises with usage), else at least every collector.limits_max_age (60 s by default).",
   [](const CV& c, const Ctx&, Sink& s) { if (c.stat && c.stat->peak) s.add(d(*c.stat->peak)); }},
  {"memcg_memory_limit_bytes", Profile::lean, MetricType::Gauge, "limit",
   "Memory limits and protections that are set: memory.high, max, swap.max below max, memory.min, low above 0 (+Inf for max); absent = not set (the full profile shows every one, unlimited as +Inf). Read with memory.stat at most every collector.limits_max_age (60 s by default; where the files are watched, only if one was written since) and at once after a high, max or OOM event.",
   [](const CV& c, const Ctx& x, Sink& s) {
     if (!c.stat) return;
     for (size_t k = 0; k < lim_count; ++k) {
       const auto& l = c.stat->limits[k];
       if (l && (x.profile == Profile::full || limit_is_set(static_cast<LimitKind>(k), *l)))
         s.add(l->unlimited ? kInf : d(l->value), {{"limit", limit_name(static_cast<LimitKind>(k))}});
     }
   }},
  {"memcg_memory_stat_bytes", Profile::lean, MetricType::Gauge, "stat",
   "Memory amounts from memory.stat (anon, file, kernel, ...) in bytes, the keys the rule's stats allowlist names." MEMCG_CACHED,
   [](const CV& c, const Ctx&, Sink& s) {
     each_stat(c, parse::StatKind::bytes, [&](size_t k, std::string_view n) { s.add(d(c.stat->values->values[k]), {{"stat", n}}); });
   }},
  {"memcg_memory_stat_events_total", Profile::lean, MetricType::Counter, "stat",
   "Event counters from memory.stat (pgmajfault, workingset_refault_file, ...), the keys the rule's stats allowlist names." MEMCG_CACHED,
   [](const CV& c, const Ctx&, Sink& s) {
     each_stat(c, parse::StatKind::events, [&](size_t k, std::string_view n) { s.add(d(c.stat->values->values[k]), {{"stat", n}}); });
   }},
  {"memcg_memory_stat_count", Profile::lean, MetricType::Gauge, "stat",
   "memory.stat values of keys this exporter does not classify (e.g. added by a newer kernel), as printed." MEMCG_CACHED,
   [](const CV& c, const Ctx&, Sink& s) {
     if (!c.stat) return;
     each_stat(c, parse::StatKind::count, [&](size_t k, std::string_view n) { s.add(d(c.stat->values->values[k]), {{"stat", n}}); });
     for (const auto& u : c.stat->values->unknown)
       if (c.settings->stats.allows_unknown(u.name)) s.add(d(u.value), {{"stat", u.name}});
   }},
  {"memcg_memory_events_total", Profile::lean, MetricType::Counter, "event",
   "memory.events counters of the cgroup and its descendants: high, max, oom, oom_kill (the full profile adds low, oom_group_kill, sock_throttled where the kernel has it, and any key a newer kernel prints), read when the kernel flags a change (an OOM kill served within milliseconds, other changes from the next pass); zeros included, so the first event is an increase. Kept after the cgroup is removed (memcg_cgroup_removed_timestamp_seconds).",
   [](const CV& c, const Ctx& x, Sink& s) {
     if (!c.probe.events) return;
     const auto& ev = c.probe.events->events;
     for (size_t k = 0; k < parse::ev_count; ++k)
       if (x.profile == Profile::full || lean_event(k))
         if (auto v = ev.get(k)) s.add(d(*v), {{"event", parse::event_key_table().name(k)}});
     if (x.profile == Profile::full)
       for (const auto& u : ev.unknown) s.add(d(u.value), {{"event", u.name}});
   }},
  {"memcg_memory_events_local_total", Profile::full, MetricType::Counter, "event",
   "memory.events.local: the same counters for events of the cgroup itself, not of its descendants (in a leaf they equal memory.events). Read when memory.events changed; kept after removal.",
   [](const CV& c, const Ctx&, Sink& s) {
     if (c.probe.events && c.probe.events->local) counters(*c.probe.events->local, parse::event_key_table(), s);
   }},
  {"memcg_memory_swap_events_total", Profile::full, MetricType::Counter, "event",
   "memory.swap.events: high (swap.high crossed), max (swap.max hit), fail (a swap allocation failed: swap full or swap.max). Read when the kernel flags a change, or with the limits where its descriptor did not fit the fd budget; kept after removal.",
   [](const CV& c, const Ctx&, Sink& s) {
     if (c.probe.events && c.probe.events->swap) counters(*c.probe.events->swap, parse::swap_event_key_table(), s);
   }},
  {"memcg_systemd_oomd_kills_total", Profile::lean, MetricType::Counter, "",
   "Times systemd-oomd chose the cgroup and killed its processes (its user.oomd_ooms extended attribute); absent where oomd never acted. Read at the first probe, when usage fell to half, and with the limits; kept after removal.",
   [](const CV& c, const Ctx&, Sink& s) {
     if (c.probe.events && c.probe.events->oomd.ooms) s.add(d(*c.probe.events->oomd.ooms));
   }},
  {"memcg_systemd_oomd_killed_processes_total", Profile::lean, MetricType::Counter, "",
   "Processes systemd-oomd killed in the cgroup (its user.oomd_kill extended attribute); absent where oomd never acted. Read as memcg_systemd_oomd_kills_total; kept after removal.",
   [](const CV& c, const Ctx&, Sink& s) {
     if (c.probe.events && c.probe.events->oomd.kills) s.add(d(*c.probe.events->oomd.kills));
   }},
  {"memcg_cgroup_removed_timestamp_seconds", Profile::lean, MetricType::Gauge, "",
   "Unix time a cgroup was removed: present only for removed cgroups, whose info and event counters stay for metrics.removed_retention (2 min by default) so that increase() sees a kill that came just before the removal.",
   [](const CV& c, const Ctx&, Sink& s) {
     if (c.removed_at != WallTime{}) s.add(to_unix_seconds(c.removed_at));
   }},
  {"memcg_memory_pressure_stalled_seconds_total", Profile::standard, MetricType::Counter, "kind",
   "Time tasks stalled on memory (memory.pressure total): kind=some (at least one task) or full (all non-idle tasks). Read at every probe that saw usage or memory.events move, else at least every collector.limits_max_age (60 s by default); not read again while the collection root's total, read every pass, has not moved since (a stall anywhere below moves it): the totals are then still what was read.",
   [](const CV& c, const Ctx&, Sink& s) {
     if (!c.probe.has_psi) return;
     if (c.probe.psi.some.present) s.add(d(c.probe.psi.some.total_us) / 1e6, {{"kind", "some"}});
     if (c.probe.psi.full.present) s.add(d(c.probe.psi.full.total_us) / 1e6, {{"kind", "full"}});
   }},
  // --- rates (full profile: Prometheus' rate() and deriv() cover the rest) --
  {"memcg_memory_stat_events_per_second", Profile::full, MetricType::Gauge, "stat",
   "Per-second rate of each memory.stat event counter between its last two reads, timed by the exporter." MEMCG_CACHED,
   [](const CV& c, const Ctx&, Sink& s) {
     each_stat(c, parse::StatKind::events, [&](size_t k, std::string_view n) { if (const auto r = c.stat->rate(k)) s.add(*r, {{"stat", n}}); });
   }},
  {"memcg_memory_stat_bytes_per_second", Profile::full, MetricType::Gauge, "stat",
   "Change per second of each memory.stat byte field between its last two reads (negative when shrinking)." MEMCG_CACHED,
   [](const CV& c, const Ctx&, Sink& s) {
     each_stat(c, parse::StatKind::bytes, [&](size_t k, std::string_view n) { if (const auto r = c.stat->rate(k)) s.add(*r, {{"stat", n}}); });
   }},
  {"memcg_memory_current_bytes_per_second", Profile::full, MetricType::Gauge, "",
   "Change per second of memory.current between the last two probes (negative when shrinking).",
   [](const CV& c, const Ctx&, Sink& s) { if (c.probe.current_rate) s.add(*c.probe.current_rate); }},
  // --- staleness bounds --------------------------------------------------
  {"memcg_stat_last_read_timestamp_seconds", Profile::lean, MetricType::Gauge, "",
   "Unix time of the cgroup's last memory.stat read: the memory.stat series are from then (memory.peak and the limits are read with it, when due: see theirs). Age: time() - this.",
   [](const CV& c, const Ctx&, Sink& s) { if (c.stat) s.add(unix_seconds(c.stat->read_at_wall)); }},
  {"memcg_stat_age_seconds", Profile::full, MetricType::Gauge, "",
   "Age of the cgroup's memory.stat values at scrape time (on the monotonic clock).",
   [](const CV& c, const Ctx& x, Sink& s) { if (auto a = c.stat_age(x.now)) s.add(to_seconds(*a)); }},
  {"memcg_stat_max_age_seconds", Profile::full, MetricType::Gauge, "",
   "The cgroup's max_age: memory.stat is re-read at least this often (per rule: memcg_rule_max_age_seconds).",
   [](const CV& c, const Ctx&, Sink& s) { s.add(to_seconds(c.settings->max_age)); }},
  {"memcg_stat_pending_change_bytes", Profile::standard, MetricType::Gauge, "",
   "Probed change (memory.current and swap, over the subtree) since memory.stat was last read; at the rule's memcg_rule_threshold_bytes it is re-read.",
   [](const CV& c, const Ctx&, Sink& s) { s.add(d(c.pending)); }},
  {"memcg_stat_threshold_bytes", Profile::full, MetricType::Gauge, "",
   "Pending change at which memory.stat is re-read (0: every probe; per rule: memcg_rule_threshold_bytes).",
   [](const CV& c, const Ctx&, Sink& s) { s.add(d(c.settings->threshold)); }},
  // --- flush costs -------------------------------------------------------
  {"memcg_stat_max_age_violations_total", Profile::standard, MetricType::Counter, "",
   "Passes at which the cgroup's memory.stat was past its max_age because the read budget (collector.max_stat_reads_per_second) deferred the read; only while a budget is set (full profile: always).",
   [](const CV& c, const Ctx& x, Sink& s) { if (x.read_budget || x.profile == Profile::full) s.add(d(c.max_age_violations)); }},
  {"memcg_stat_reads_total", Profile::standard, MetricType::Counter, "reason",
   "memory.stat reads of the cgroup by reason (threshold, event, max_age, forced), each once it occurred; the initial read is implied by the series' existence (full profile: every reason, initial included, zeros too).",
   [](const CV& c, const Ctx& x, Sink& s) {
     for (auto r : cache::kReadReasons) {
       const uint64_t n = c.reads[static_cast<size_t>(r)];
       if (x.profile == Profile::full || (r != cache::ReadReason::initial && n > 0)) s.add(d(n), {{"reason", cache::to_string(r)}});
     }
   }},
  {"memcg_stat_skips_total", Profile::full, MetricType::Counter, "",
   "Probes after which memory.stat was not re-read and cached values were served.",
   [](const CV& c, const Ctx&, Sink& s) { s.add(d(c.skips)); }},
  {"memcg_stat_read_seconds_total", Profile::full, MetricType::Counter, "",
   "Wall time spent reading the cgroup's memory.stat (the kernel flushes per-CPU stats on read).",
   [](const CV& c, const Ctx&, Sink& s) { s.add(to_seconds(c.read_wall)); }},
  {"memcg_stat_read_cpu_seconds_total", Profile::standard, MetricType::Counter, "",
   "CPU time of the reading thread spent reading the cgroup's memory.stat, kernel flush work included (the reads of a pass are timed in batches of 32, each charged the batch's CPU in proportion to its wall time).",
   [](const CV& c, const Ctx&, Sink& s) { s.add(to_seconds(c.read_cpu)); }},
  // --- per rule ------------------------------------------------------------
  {"memcg_rule_threshold_bytes", Profile::lean, MetricType::Gauge, "rule",
   "Pending change at which a cgroup under this rule has memory.stat re-read (0: every probe). Cgroups name their rule in memcg_cgroup_info.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.rules) for (const auto& r : *x.snap.rules) s.add(d(r->threshold), {{"rule", r->name}}); }},
  {"memcg_rule_max_age_seconds", Profile::lean, MetricType::Gauge, "rule",
   "Longest a cgroup under this rule serves cached memory.stat values: it is re-read at least this often.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.rules) for (const auto& r : *x.snap.rules) s.add(to_seconds(r->max_age), {{"rule", r->name}}); }},
  // --- the kernel (found once at start: cgroupfs/kernel_facts.h) ----------
  {"memcg_kernel_stat_flush_threshold_bytes", Profile::lean, MetricType::Gauge, "",
   "The kernel's memory.stat flush threshold on this host, in bytes: 64 x online CPUs updates of a page each (MEMCG_CHARGE_BATCH). A read flushes the per-CPU counters first only when more updates than this are pending: host-wide before Linux 6.8, in the cgroup's own subtree since.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.kernel) s.add(d(x.snap.kernel->flush_threshold_bytes())); }},
  {"memcg_kernel_stat_lag_max_bytes", Profile::lean, MetricType::Gauge, "",
   "How far a memory.stat amount may lag its cgroup's true value at the moment it is read, by the kernel's own batching: the threshold counted but not flushed plus one batch per CPU not yet counted (2 x memcg_kernel_stat_flush_threshold_bytes). A cached value's total bound adds the rule's threshold (memcg:stat_staleness_bound_bytes).", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.kernel) s.add(d(x.snap.kernel->stat_lag_bytes())); }},
  {"memcg_kernel_stat_flush_period_seconds", Profile::lean, MetricType::Gauge, "",
   "Interval of the kernel's periodic flush of every cgroup's statistics (FLUSH_TIME): updates below the threshold wait at most this long, or longer when the flush worker runs late on a busy host.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.kernel) s.add(to_seconds(cgroupfs::kPeriodicFlush)); }},
  {"memcg_exporter_kernel_feature", Profile::lean, MetricType::Gauge, "feature",
   "1 if the kernel offers a feature memcg-exporter looks for, 0 if not, found at start: stat_flush_per_cgroup (6.8+: a memory.stat read flushes by its own subtree's pending updates), psi (memory.pressure), memory_stat_zswap, memory_stat_hugetlb (memory.stat keys newer than 6.1, served like the rest), memory_peak_fd_reset (6.12+: memory.peak reset per open file; only where the root is cgroup2fs, since elsewhere a write replaces the file). The status page says what each changes.", nullptr,
   [](const Ctx& x, Sink& s) {
     if (x.snap.kernel)
       for (const auto& f : x.snap.kernel->features) s.add(f.present ? 1 : 0, {{"feature", f.name}});
   }},
  // --- the exporter itself -----------------------------------------------
  {"memcg_exporter_build_info", Profile::lean, MetricType::Gauge, "version, revision",
   "Always 1; labels carry the version and source revision.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(1, {{"version", x.version}, {"revision", x.revision}}); }},
  {"memcg_exporter_last_pass_timestamp_seconds", Profile::lean, MetricType::Gauge, "",
   "Unix time of the last completed collection pass: time() minus it far above the probe interval means the collector loop is stuck.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.pass) s.add(unix_seconds(x.snap.taken_at_wall)); }},
  {"memcg_exporter_last_rescan_timestamp_seconds", Profile::lean, MetricType::Gauge, "",
   "Unix time of the last rescan that could read the cgroup root (new and removed cgroups are seen at rescans).", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.last_rescan_wall.time_since_epoch().count()) s.add(unix_seconds(x.snap.last_rescan_wall)); }},
  {"memcg_exporter_rescans_total", Profile::lean, MetricType::Counter, "method",
   "Rescans (every collector.rescan_interval, and at once after a removal the last one could not rule out) by how they learnt that nothing was added or removed: method walk (the tree was walked: a path lookup per directory, a listing of those that changed) or count (the root's cgroup.stat counted exactly the collected cgroups, none of which had gone, plus the directories without the memory controller, each vouched for by its own cgroup.stat: no walk; every sixth rescan walks anyway, for renames).", nullptr,
   [](const Ctx& x, Sink& s) {
     s.add(d(x.snap.rescans_walked), {{"method", "walk"}});
     s.add(d(x.snap.rescans_counted), {{"method", "count"}});
   }},
  {"memcg_exporter_root_readable", Profile::lean, MetricType::Gauge, "",
   "1 if the cgroup root could be opened at the last rescan, 0 if not (the last data collected is served; cgroups are not rediscovered).", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.pass) s.add(x.snap.root_ok ? 1 : 0); }},
  {"memcg_exporter_pass_overruns_total", Profile::lean, MetricType::Counter, "",
   "Passes that took longer than collector.probe_interval; the next pass then starts at once, so cgroups are probed less often than configured.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.status.pass_overruns.load())); }},
  {"memcg_exporter_cgroups", Profile::lean, MetricType::Gauge, "",
   "Cgroups collected in the last pass.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.cgroups.size())); }},
  {"memcg_exporter_cgroups_limited", Profile::lean, MetricType::Gauge, "",
   "Cgroups left out because collector.max_cgroups was reached.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.cgroups_limited)); }},
  {"memcg_exporter_cgroups_left_out", Profile::lean, MetricType::Gauge, "reason",
   "Cgroups found at the last rescan but not collected for want of descriptors: reason fd_budget (no room left under RLIMIT_NOFILE; raise LimitNOFILE=), memory_budget (their descriptors' kernel memory would not fit in the daemon's own memory limit; raise MemoryMax= or the pod's memory limit) or fds_exhausted (the kernel refused: EMFILE, ENFILE, ENOMEM). Collected cgroups are never dropped for this; these are added as room frees up.", nullptr,
   [](const Ctx& x, Sink& s) {
     s.add(d(x.snap.left_out.fd_budget), {{"reason", "fd_budget"}});
     s.add(d(x.snap.left_out.memory_budget), {{"reason", "memory_budget"}});
     s.add(d(x.snap.left_out.fds_exhausted), {{"reason", "fds_exhausted"}});
   }},
  {"memcg_exporter_engine_lookups_total", Profile::lean, MetricType::Counter, "engine,result",
   "Container inspections asked of the Engine API (containers.docker_socket, containers.podman_socket; podman counts the podman_user_socket ones too), one per new container, and of containerd (containers.containerd_socket), one per container its events announce: result ok (named), not_found (the engine does not know the id, e.g. gone already) or error (no answer within containers.engine_timeout, refused, not an inspect reply: the log says which). Absent for an engine that is off.", nullptr,
   [](const Ctx& x, Sink& s) {
     const auto add = [&](const std::string& engine, const auto& l) {
       s.add(d(l[0]), {{"engine", engine}, {"result", "ok"}});
       s.add(d(l[1]), {{"engine", engine}, {"result", "not_found"}});
       s.add(d(l[2]), {{"engine", engine}, {"result", "error"}});
     };
     for (size_t k = 0; k < runtime::kEngineCount; ++k)
       if (x.snap.engines[k]) add(std::string(runtime::kEngines[k]), x.snap.engines[k]->lookups);
     if (x.snap.containerd) add("containerd", x.snap.containerd->lookups);
   }},
  {"memcg_exporter_containerd_connected", Profile::lean, MetricType::Gauge, "",
   "1 while containerd's event stream is open and its last container list succeeded (containers.containerd_socket), 0 while it is absent, refusing or failing (the log says why, once); absent when containerd is off.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.containerd) s.add(x.snap.containerd->connected ? 1.0 : 0.0); }},
  {"memcg_exporter_containerd_lists_total", Profile::lean, MetricType::Counter, "result",
   "Whole lists of containerd's containers in containers.containerd_namespaces (at start, after the event stream reconnects, and every 5 minutes), by result ok or error; absent when containerd is off.", nullptr,
   [](const Ctx& x, Sink& s) {
     if (!x.snap.containerd) return;
     s.add(d(x.snap.containerd->lists_ok), {{"result", "ok"}});
     s.add(d(x.snap.containerd->lists_failed), {{"result", "error"}});
   }},
  {"memcg_exporter_containerd_events_total", Profile::lean, MetricType::Counter, "",
   "Container create, update and delete events heard on containerd's event stream in containers.containerd_namespaces; absent when containerd is off.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.containerd) s.add(d(x.snap.containerd->events)); }},
  {"memcg_exporter_cgroup_open_fds", Profile::lean, MetricType::Gauge, "",
   "Descriptors the collected cgroups hold open (their directories and kept files).", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.cgroup_fds)); }},
  {"memcg_exporter_cgroup_max_fds", Profile::lean, MetricType::Gauge, "",
   "Descriptors the collected cgroups may hold: RLIMIT_NOFILE minus what the web server and the rest of the daemon may need, or what memcg_exporter_memory_budget_bytes allows (24 MiB for the daemon, then 8 KiB per descriptor), whichever is lower. Absent when no budget is set.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.cgroup_fd_budget != UINT64_MAX) s.add(d(x.snap.cgroup_fd_budget)); }},
  {"memcg_exporter_memory_budget_bytes", Profile::lean, MetricType::Gauge, "",
   "The memory limit the daemon sizes what it collects by: its own cgroup's lowest memory.max or memory.high (collector.memory_budget = \"auto\"), or the configured size. Absent when there is none.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.snap.memory_budget) s.add(d(x.snap.memory_budget)); }},
  {"memcg_exporter_cgroups_without_memory", Profile::lean, MetricType::Gauge, "",
   "Cgroup directories skipped because the memory controller is not enabled there.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.cgroups_no_memory)); }},
  {"memcg_exporter_event_wakeups_total", Profile::lean, MetricType::Counter, "",
   "Times the collector woke between passes because the kernel flagged an event file (memory.events, memory.swap.events) of a collected cgroup, at most 100 a second, or a cgroup's last task exited (cgroup.events, at most 1,000 a second); an OOM kill is published at once, other counters with the next pass.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.event_wakeups)); }},
  {"memcg_exporter_event_wakeup_reads_total", Profile::lean, MetricType::Counter, "",
   "Cgroups whose event files those wake-ups read.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.event_wakeup_reads)); }},
  {"memcg_exporter_removed_kills_recovered_total", Profile::lean, MetricType::Counter, "",
   "OOM killer events (oom, oom_kill, oom_group_kill) of cgroups removed before their memory.events was read after their last task exited, recovered from the parent's count and served on the removed cgroup.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.kills_recovered)); }},
  {"memcg_exporter_removed_kills_unattributed_total", Profile::lean, MetricType::Counter, "",
   "Such events that could not be given to one removed cgroup (several removed unread at once, or a descendant of the parent not collected); only the parent's count has them.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.kills_unattributed)); }},
  {"memcg_exporter_removed_cgroups", Profile::lean, MetricType::Gauge, "",
   "Removed cgroups whose info and event counters are still served (metrics.removed_retention, at most metrics.removed_max).", nullptr,
   [](const Ctx& x, Sink& s) { s.add(x.snap.removed ? d(x.snap.removed->size()) : 0.0); }},
  {"memcg_exporter_removed_dropped_total", Profile::lean, MetricType::Counter, "",
   "Removed cgroups dropped before metrics.removed_retention ended because metrics.removed_max were kept already.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.removed_dropped)); }},
  {"memcg_exporter_cgroups_events_polled", Profile::lean, MetricType::Gauge, "",
   "Cgroups whose memory.events is polled (read only when the kernel flags a change) rather than read every pass.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.events_polled)); }},
  {"memcg_exporter_cgroups_limits_watched", Profile::lean, MetricType::Gauge, "",
   "Cgroups whose limit files are watched (inotify): at collector.limits_max_age their limits are re-read only if the kernel reported a write to one since the last read; the others' every limits_max_age.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.limits_watched)); }},
  {"memcg_exporter_passes_total", Profile::lean, MetricType::Counter, "",
   "Collection passes completed.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.pass)); }},
  {"memcg_exporter_stat_reads_total", Profile::lean, MetricType::Counter, "reason",
   "memory.stat reads of all cgroups by reason, including cgroups since removed.", nullptr,
   [](const Ctx& x, Sink& s) {
     for (auto r : cache::kReadReasons) s.add(d(x.snap.reads[static_cast<size_t>(r)]), {{"reason", cache::to_string(r)}});
   }},
  {"memcg_exporter_stat_skips_total", Profile::lean, MetricType::Counter, "",
   "Probes of all cgroups that served cached memory.stat values instead of reading.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.skips)); }},
  {"memcg_exporter_stat_reads_deferred_total", Profile::lean, MetricType::Counter, "",
   "memory.stat reads the read budget postponed to a later pass (also counted as skips).", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.reads_deferred)); }},
  {"memcg_exporter_stat_reads_unchanged_total", Profile::lean, MetricType::Counter, "",
   "memory.stat reads (of those in memcg_exporter_stat_reads_total) that returned the same bytes as the cgroup's previous read: its values were kept without parsing them again.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.snap.reads_unchanged)); }},
  {"memcg_exporter_stat_read_duration_seconds", Profile::lean, MetricType::Histogram, "",
   "Wall time of each memory.stat read.", nullptr,
   [](const Ctx& x, Sink& s) { s.add_histogram(to_value(x.snap.stat_read_seconds)); }},
  {"memcg_exporter_pass_duration_seconds", Profile::lean, MetricType::Histogram, "",
   "Wall time of each collection pass (probes, decisions and reads of every cgroup).", nullptr,
   [](const Ctx& x, Sink& s) { s.add_histogram(to_value(x.snap.pass_seconds)); }},
  {"memcg_exporter_file_reads_total", Profile::lean, MetricType::Counter, "file",
   "Reads of each cgroup file, all cgroups since start: probes, event wake-ups, memory.stat reads and the files "
   "they take along (what each file costs per pass: docs/performance.md).", nullptr,
   [](const Ctx& x, Sink& s) { per_file(x.snap.file_reads, s); }},
  {"memcg_exporter_read_errors_total", Profile::lean, MetricType::Counter, "file",
   "Failed reads of cgroup files other than a cgroup going away (EACCES, EIO, ...).", nullptr,
   [](const Ctx& x, Sink& s) { per_file(x.snap.read_errors, s); }},
  {"memcg_exporter_parse_errors_total", Profile::lean, MetricType::Counter, "file",
   "Malformed cgroup files or lines, skipped.", nullptr,
   [](const Ctx& x, Sink& s) { per_file(x.snap.parse_errors, s); }},
  {"memcg_exporter_scrape_duration_seconds", Profile::lean, MetricType::Gauge, "",
   "Time taken by the previous /metrics request to build, serialize and compress the response.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(x.status.last_scrape_seconds.load()); }},
  {"memcg_exporter_cpu_seconds_total", Profile::lean, MetricType::Counter, "phase",
   "CPU time of the daemon by what it did: phase=probe (the cheap files of every cgroup, propagation, decisions, publishing the snapshot), read (memory.stat re-reads with memory.peak, memory.pressure and limits), rescan (discovery), wait (the collector between passes: going to sleep and waking up, the pass's log and systemd notifications, reloads), scrape (answering /metrics), http (the connection gate: accepting, TLS, reading and parsing requests, writing responses). process_cpu_seconds_total minus their sum is the rest (the other endpoints, start-up).", nullptr,
   [](const Ctx& x, Sink& s) {
     s.add(to_seconds(x.snap.probe_cpu), {{"phase", "probe"}});
     s.add(to_seconds(x.snap.read_cpu), {{"phase", "read"}});
     s.add(to_seconds(x.snap.rescan_cpu), {{"phase", "rescan"}});
     s.add(to_seconds(x.snap.wait_cpu), {{"phase", "wait"}});
     s.add(static_cast<double>(x.status.scrape_cpu.ns.load()) / 1e9, {{"phase", "scrape"}});
     s.add(static_cast<double>(x.status.http.cpu_ns()) / 1e9, {{"phase", "http"}});
   }},
  {"memcg_exporter_http_connections", Profile::lean, MetricType::Gauge, "state",
   "Client connections open: state=relayed (a request of theirs is at a worker now) or waiting (every other: in a TLS handshake, sending a request, waiting for a worker, idle between requests, or being written a response; costs a descriptor, no worker).", nullptr,
   [](const Ctx& x, Sink& s) {
     s.add(d(x.status.http.waiting.load()), {{"state", "waiting"}});
     s.add(d(x.status.http.relayed.load()), {{"state", "relayed"}});
   }},
  {"memcg_exporter_http_connections_accepted_total", Profile::lean, MetricType::Counter, "",
   "Client connections accepted.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.status.http.accepted.load())); }},
  {"memcg_exporter_http_connections_refused_total", Profile::lean, MetricType::Counter, "reason",
   "Client connections closed at once: reason=per_client (the client already had web.max_connections_per_client open), max_open (web.max_open_connections reached) or client_hello (TLS: the first bytes were not a ClientHello of at most 16 KiB).", nullptr,
   [](const Ctx& x, Sink& s) {
     s.add(d(x.status.http.refused_per_client.load()), {{"reason", "per_client"}});
     s.add(d(x.status.http.refused_total.load()), {{"reason", "max_open"}});
     s.add(d(x.status.http.refused_hello.load()), {{"reason", "client_hello"}});
   }},
  {"memcg_exporter_http_connections_evicted_total", Profile::lean, MetricType::Counter, "",
   "Client connections closed to let another client in: every web.max_open_connections was taken, and the oldest waiting connection of the client holding the most went.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.status.http.evicted.load())); }},
  {"memcg_exporter_http_bytes_total", Profile::lean, MetricType::Counter, "direction",
   "Bytes the connection gate received from clients (direction=received) and sent to them (sent), as HTTP (inside TLS).", nullptr,
   [](const Ctx& x, Sink& s) {
     s.add(d(x.status.http.bytes_received.load()), {{"direction", "received"}});
     s.add(d(x.status.http.bytes_sent.load()), {{"direction", "sent"}});
   }},
  {"memcg_exporter_http_response_buffer_bytes", Profile::lean, MetricType::Gauge, "",
   "Bytes held for responses on their way to clients now: each body once (a /metrics body is shared by the scrapes of its snapshot), heads, and each writing connection's kernel send buffer (2 x 64 KiB). Past 48 MiB, or a client's share of it, a client that holds a response already waits for its next.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.status.http.buffered_bytes.load())); }},
  {"memcg_exporter_http_request_head_timeouts_total", Profile::lean, MetricType::Counter, "",
   "Client connections closed because their request head was not complete within web.request_timeout (idle or trickling clients).", nullptr,
   [](const Ctx& x, Sink& s) { s.add(d(x.status.http.head_timeouts.load())); }},
  {"memcg_exporter_config_last_reload_successful", Profile::lean, MetricType::Gauge, "",
   "1 if the last configuration (re)load succeeded, 0 if it failed and the previous configuration is in force.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(x.status.reload_ok.load() ? 1 : 0); }},
  {"memcg_exporter_config_last_reload_success_timestamp_seconds", Profile::lean, MetricType::Gauge, "",
   "Unix time of the last successful configuration (re)load.", nullptr,
   [](const Ctx& x, Sink& s) { s.add(x.status.reload_success_unix.load()); }},
  {"process_cpu_seconds_total", Profile::lean, MetricType::Counter, "",
   "Total user and system CPU time spent in seconds.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.process.cpu_seconds) s.add(*x.process.cpu_seconds); }},
  {"process_resident_memory_bytes", Profile::lean, MetricType::Gauge, "",
   "Resident memory size in bytes.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.process.resident_bytes) s.add(*x.process.resident_bytes); }},
  {"process_virtual_memory_bytes", Profile::lean, MetricType::Gauge, "",
   "Virtual memory size in bytes.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.process.virtual_bytes) s.add(*x.process.virtual_bytes); }},
  {"process_start_time_seconds", Profile::lean, MetricType::Gauge, "",
   "Start time of the process since unix epoch in seconds.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.process.start_time_seconds) s.add(*x.process.start_time_seconds); }},
  {"process_open_fds", Profile::lean, MetricType::Gauge, "",
   "Number of open file descriptors (on kernels before 6.2, which cannot give the count in one stat, counted at most every 30 s).", nullptr,
   [](const Ctx& x, Sink& s) { if (x.process.open_fds) s.add(*x.process.open_fds); }},
  {"process_max_fds", Profile::lean, MetricType::Gauge, "",
   "Maximum number of open file descriptors.", nullptr,
   [](const Ctx& x, Sink& s) { if (x.process.max_fds) s.add(*x.process.max_fds); }},
};
// clang-format on


}  // namespace

std::string_view type_name(MetricType t) noexcept {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
    case MetricType::Summary: return "summary";
    case MetricType::Untyped: return "untyped";
  }
  return "untyped";
}

std::span<const MetricDef> metric_table() noexcept { return kTable; }

}  // namespace memcg::exporter
