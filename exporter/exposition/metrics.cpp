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

namespace memcg::exporter {
namespace {

using config::Profile;
using prometheus::MetricType;
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
prometheus::ClientMetric::Histogram to_prometheus(const Histogram<Bounds>& h) {
  prometheus::ClientMetric::Histogram out;
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

std::string_view type_name(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
    case MetricType::Summary: return "summary";
    case MetricType::Untyped: return "untyped";
  }
  return "untyped";
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
   [](const Ctx& x, Sink& s) { s.add_histogram(to_prometheus(x.snap.stat_read_seconds)); }},
  {"memcg_exporter_pass_duration_seconds", Profile::lean, MetricType::Histogram, "",
   "Wall time of each collection pass (probes, decisions and reads of every cgroup).", nullptr,
   [](const Ctx& x, Sink& s) { s.add_histogram(to_prometheus(x.snap.pass_seconds)); }},
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

namespace {

// prometheus-cpp's sink: one ClientMetric per sample.
class FamilySink final : public SampleSink {
 public:
  explicit FamilySink(prometheus::MetricFamily& family) : family_(family) {}
  void bind(std::string_view cgroup_id, const Labels* extra) {
    cgroup_id_ = cgroup_id;
    extra_ = extra;
  }
  void add_labels(double value, std::span<const Label> labels) override {
    auto& m = next(labels);
    switch (family_.type) {
      case MetricType::Counter: m.counter.value = value; break;
      case MetricType::Gauge: m.gauge.value = value; break;
      default: m.untyped.value = value; break;
    }
  }
  void add_histogram(const prometheus::ClientMetric::Histogram& h) override { next({}).histogram = h; }

 private:
  prometheus::ClientMetric& next(std::span<const Label> labels) {
    auto& m = family_.metric.emplace_back();
    m.label.reserve(labels.size() + 1 + (extra_ ? extra_->size() : 0));
    if (!cgroup_id_.empty()) m.label.push_back({"cgroup_id", std::string(cgroup_id_)});
    if (extra_)
      for (const auto& [k, v] : *extra_) m.label.push_back({std::string(k), std::string(v)});
    for (const auto& [k, v] : labels) m.label.push_back({std::string(k), std::string(v)});
    return m;
  }
  prometheus::MetricFamily& family_;
  std::string_view cgroup_id_;
  const Labels* extra_ = nullptr;
};

// Bytes a label value cannot carry as they are: backslash, quote and the
// controls (newline included), and every byte of a multi-byte sequence,
// which is checked for UTF-8.
constexpr std::array<bool, 256> kNeedsCare = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[static_cast<size_t>(c)] = c >= 0x80 || is_control(static_cast<unsigned char>(c)) || c == '\\' || c == '"';
  return t;
}();

// The text under construction, written at the end of a text::Buffer (grown
// without being zeroed first). Each piece of a line is copied inline
// (text::copy_short) instead of by a call to memcpy: five or six pieces a
// line and ~22,700 lines a scrape at 1,000 cgroups, each call costing more
// to make than its 10-80 bytes to copy.
class TextOut {
 public:
  explicit TextOut(text::Buffer& b) : b_(b) {}
  TextOut(const TextOut&) = delete;
  TextOut& operator=(const TextOut&) = delete;
  TextOut& append(std::string_view v) {
    text::copy_short(b_.room(v.size()), v.data(), v.size());
    b_.commit(v.size());
    return *this;
  }
  void push_back(char c) {
    *b_.room(1) = c;
    b_.commit(1);
  }
  // Room for a line of up to kMaxLine bytes written in place, then kept
  // with commit(): a line composed there is copied once, not twice.
  static constexpr size_t kMaxLine = 512;
  char* line_room() { return b_.room(kMaxLine); }
  void commit(size_t n) noexcept { b_.commit(n); }

 private:
  text::Buffer& b_;
};

// The text sink: writes samples as they come. The family header is written
// before its first sample, so families without samples vanish as above.
class TextSink final : public SampleSink {
 public:
  TextSink(TextOut& out, const MetricDef& def) : out_(out), def_(def) {}
  void bind(std::string_view cgroup_id, const Labels* extra) {
    cgroup_id_ = cgroup_id;
    extra_ = extra;
  }
  void add_labels(double value, std::span<const Label> labels) override {
    header();
    if (compose_line(value, labels)) return;
    out_.append(def_.name);
    labels_open(labels, {}, 0);
    out_.push_back(' ');
    number(value);
    out_.push_back('\n');
  }
  void add_histogram(const prometheus::ClientMetric::Histogram& h) override {
    header();
    out_.append(def_.name).append("_count");
    labels_open({}, {}, 0);
    out_.push_back(' ');
    number(static_cast<double>(h.sample_count));
    out_.push_back('\n');
    out_.append(def_.name).append("_sum");
    labels_open({}, {}, 0);
    out_.push_back(' ');
    number(h.sample_sum);
    out_.push_back('\n');
    for (const auto& b : h.bucket) {
      out_.append(def_.name).append("_bucket");
      labels_open({}, "le", b.upper_bound);
      out_.push_back(' ');
      number(static_cast<double>(b.cumulative_count));
      out_.push_back('\n');
    }
  }

 private:
  void header() {
    if (started_) return;
    started_ = true;
    out_.append("# HELP ").append(def_.name).push_back(' ');
    out_.append(def_.help).push_back('\n');
    out_.append("# TYPE ").append(def_.name).push_back(' ');
    out_.append(type_name(def_.type)).push_back('\n');
  }
  void label(std::string_view k, std::string_view v, bool& first) {
    out_.push_back(first ? '{' : ',');
    first = false;
    out_.append(k).append("=\"");
    // Runs without a character to escape (all of a cgroup path, usually) are
    // appended whole rather than byte by byte.
    // Bytes that are not UTF-8 become U+FFFD (see plugin/utf8.h).
    size_t run = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const char c = v[i];
      if (!kNeedsCare[static_cast<unsigned char>(c)]) continue;  // one load per byte on the common path
      if (static_cast<unsigned char>(c) >= 0x80) {
        const size_t len = utf8_sequence_length(v, i);
        if (len > 0) {
          i += len - 1;
          continue;
        }
        out_.append(v.substr(run, i - run)).append(kReplacementCharacter);
        run = i + 1;
        continue;
      }
      if (c != '\\' && c != '"' && c != '\n') {
        // Other controls (ESC, CR, BEL) are valid in the format but rewrite
        // the terminal of whoever curls /metrics: U+FFFD, as for non-UTF-8.
        out_.append(v.substr(run, i - run)).append(kReplacementCharacter);
        run = i + 1;
        continue;
      }
      out_.append(v.substr(run, i - run)).append(c == '\\' ? "\\\\" : c == '"' ? "\\\"" : "\\n");
      run = i + 1;
    }
    out_.append(v.substr(run));
    out_.push_back('"');
  }
  // A line without a byte to escape (every value line: the cgroup is its
  // id) is composed in place at the end of the text and kept whole, instead
  // of in ten appends and pushes; the rest take the general path below.
  class LineWriter {
   public:
    explicit LineWriter(char* buf) noexcept : buf_(buf) {}
    void put(std::string_view s) noexcept {
      if (s.size() > TextOut::kMaxLine - n_) {
        overflow_ = true;
        return;
      }
      text::copy_short(buf_ + n_, s.data(), s.size());
      n_ += s.size();
    }
    // A literal's size is known here, so its copy (a bracket, a quote, a
    // separator: about half of a line's copies) is inlined rather than a
    // call to memcpy.
    template <size_t N>
    void put(const char (&s)[N]) noexcept {
      if (N - 1 > TextOut::kMaxLine - n_) {
        overflow_ = true;
        return;
      }
      std::memcpy(buf_ + n_, s, N - 1);
      n_ += N - 1;
    }
    bool label(std::string_view k, std::string_view v, bool& first) noexcept {
      for (const char c : v)
        if (kNeedsCare[static_cast<unsigned char>(c)]) return false;
      if (first) put("{");
      else put(",");
      first = false;
      put(k);
      put("=\"");
      put(v);
      put("\"");
      return true;
    }
    // The line's length; nullopt when it did not fit.
    std::optional<size_t> size() const noexcept {
      if (overflow_) return std::nullopt;
      return n_;
    }

   private:
    char* buf_;  // TextOut::kMaxLine bytes
    size_t n_ = 0;
    bool overflow_ = false;
  };
  bool compose_line(double value, std::span<const Label> labels) {
    LineWriter w(out_.line_room());
    w.put(def_.name);
    bool first = true;
    if (!cgroup_id_.empty()) {  // digits only: nothing to escape
      w.put("{cgroup_id=\"");
      w.put(cgroup_id_);
      w.put("\"");
      first = false;
    }
    if (extra_)
      for (const auto& [k, v] : *extra_)
        if (!w.label(k, v, first)) return false;
    for (const auto& [k, v] : labels)
      if (!w.label(k, v, first)) return false;
    if (first) w.put(" ");
    else w.put("} ");
    char buf[32];
    w.put(format(value, buf));
    w.put("\n");
    const auto n = w.size();
    if (n) out_.commit(*n);
    return n.has_value();
  }
  void labels_open(std::span<const Label> labels, std::string_view le_key, double le) {
    bool first = true;
    if (!cgroup_id_.empty()) {  // digits only: nothing to escape
      out_.append("{cgroup_id=\"").append(cgroup_id_).push_back('"');
      first = false;
    }
    if (extra_)
      for (const auto& [k, v] : *extra_) label(k, v, first);
    for (const auto& [k, v] : labels) label(k, v, first);
    if (!le_key.empty()) {
      char buf[32];
      label(le_key, format(le, buf), first);
    }
    if (!first) out_.push_back('}');
  }
  // prometheus-cpp's number format: %.16g (max_digits10 - 1), +Inf/-Inf/Nan.
  static std::string_view format(double v, char (&buf)[32]) {
    if (std::isnan(v)) return "Nan";
    if (std::isinf(v)) return v < 0 ? "-Inf" : "+Inf";
    // Most values are byte counts and counters: %.16g prints an integer below
    // 1e15 as plain digits, which to_chars does several times faster.
    if (std::fabs(v) < 1e15 && v == std::trunc(v) && !(v == 0 && std::signbit(v))) {
      auto r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v));
      return std::string_view(buf, static_cast<size_t>(r.ptr - buf));
    }
    // to_chars with a precision is specified as printf's %.*g, byte for
    // byte, and is several times faster than snprintf (timestamps, seconds).
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 16);
    return std::string_view(buf, static_cast<size_t>(r.ptr - buf));
  }
  void number(double v) {
    char buf[32];
    out_.append(format(v, buf));
  }

  TextOut& out_;
  const MetricDef& def_;
  std::string_view cgroup_id_;
  const Labels* extra_ = nullptr;
  bool started_ = false;
};

// Runs every getter of the table that the profile serves over the snapshot,
// per family: `make(def)` gives the family's sink, whose bind(cgroup_id,
// extra) points it at a cgroup.
enum class Families { all, identity, values };

// Whether a profile serves a metric of either table: lean, default and full
// each add to the one before; cadvisor serves its own table and the few of
// this exporter's series that say how fresh it is (served_with_cadvisor).
bool serves(const MetricDef& def, Profile p) noexcept {
  if (def.profile == Profile::cadvisor || p == Profile::cadvisor)
    return p == Profile::cadvisor && (def.profile == Profile::cadvisor || served_with_cadvisor(def));
  return def.profile <= p;
}

std::array<std::span<const MetricDef>, 2> tables() noexcept { return {std::span<const MetricDef>(kTable), cadvisor_table()}; }

// The kubelet's labels of every cgroup, for the cadvisor profile: computed
// once per scrape, then shared by its families.
std::vector<CadvisorLabels> all_cadvisor_labels(const Snapshot& snap, const PodNames& pods) {
  std::vector<CadvisorLabels> out;
  out.reserve(snap.cgroups.size());
  for (const auto& c : snap.cgroups) out.push_back(cadvisor_labels(snap, c, pods));
  return out;
}

// A cgroup's labels in the cadvisor profile: the kubelet's six for its table,
// `id` alone for the exporter's own series, which join on it. The kubelet
// writes empty ones as label="", which Prometheus stores as no label at all:
// they are left out, as this exporter does everywhere.
void cadvisor_key(const CadvisorLabels& l, bool compat, SampleSink::Labels& out) {
  out.clear();
  if (!compat) {
    out.emplace_back("id", l.id);
    return;
  }
  for (const auto& [k, v] : {std::pair<std::string_view, std::string_view>{"container", l.container}, {"id", l.id}, {"image", l.image},
                             {"name", l.name}, {"namespace", l.namespace_}, {"pod", l.pod}})
    if (!v.empty()) out.emplace_back(k, v);
}

// The families a removed cgroup keeps (tombstones.h): what names it and
// its counters; its gauges went with its memory.
constexpr std::string_view kKeptAfterRemoval[] = {
    "memcg_cgroup_info", "memcg_memory_events_total", "memcg_memory_events_local_total",
    "memcg_memory_swap_events_total", "memcg_systemd_oomd_kills_total", "memcg_systemd_oomd_killed_processes_total",
    "memcg_cgroup_removed_timestamp_seconds", "container_oom_events_total"};

bool kept_after_removal(const MetricDef& def) noexcept {
  return std::find(std::begin(kKeptAfterRemoval), std::end(kKeptAfterRemoval), def.name) != std::end(kKeptAfterRemoval);
}

// The removed cgroups a scrape serves, as indexes into snap.removed. The
// cadvisor profile keys series by path: a removed cgroup whose path lives
// again (a restarted unit), or was removed again later, would repeat a
// series, so only the newest of a path that is not live is served there.
std::vector<size_t> removed_served(const ScrapeContext& ctx) {
  std::vector<size_t> out;
  if (!ctx.snap.removed) return out;
  const auto& removed = *ctx.snap.removed;
  if (ctx.profile != Profile::cadvisor) {
    for (size_t i = 0; i < removed.size(); ++i) out.push_back(i);
    return out;
  }
  std::unordered_set<std::string_view> seen;
  for (const auto& c : ctx.snap.cgroups) seen.insert(c.id->path);
  for (size_t i = removed.size(); i-- > 0;)
    if (seen.insert(removed[i].id->path).second) out.push_back(i);
  std::reverse(out.begin(), out.end());
  return out;
}

// A cgroup's id label value: its directory's inode number, which is the
// kernel's cgroup ID (systemd's ControlGroupId, BPF's cgroup id), unique
// while it exists. Formatted once per scrape, not once per family.
class IdTexts {
 public:
  explicit IdTexts(const std::vector<CgroupView>& cgroups) : ids_(cgroups.size()) {
    for (size_t i = 0; i < cgroups.size(); ++i) {
      const auto r = std::to_chars(ids_[i].text, ids_[i].text + sizeof ids_[i].text, cgroups[i].id->inode);
      ids_[i].size = static_cast<unsigned char>(r.ptr - ids_[i].text);
    }
  }
  std::string_view operator[](size_t i) const noexcept { return {ids_[i].text, ids_[i].size}; }

 private:
  struct Id {
    char text[23];
    unsigned char size;
  };
  std::vector<Id> ids_;
};

template <typename MakeSink>
void for_each_family(const ScrapeContext& ctx, MakeSink&& make, Families which = Families::all) {
  SampleSink::Labels labels;
  const bool cadvisor = ctx.profile == Profile::cadvisor;
  const std::vector<size_t> removed = removed_served(ctx);
  static const std::vector<CgroupView> kNone;
  const IdTexts live_ids(ctx.snap.cgroups), removed_ids(ctx.snap.removed ? *ctx.snap.removed : kNone);
  std::vector<CadvisorLabels> kubelet, kubelet_removed;
  if (cadvisor) {
    const PodNames pods = pod_names(ctx.snap);
    kubelet = all_cadvisor_labels(ctx.snap, pods);
    for (size_t i : removed) kubelet_removed.push_back(cadvisor_labels(ctx.snap, (*ctx.snap.removed)[i], pods));
  }
  for (auto table : tables())
    for (const auto& def : table) {
      if (!serves(def, ctx.profile)) continue;
      const bool identity = &def == &kTable[0];  // memcg_cgroup_info
      if ((which == Families::identity && !identity) || (which == Families::values && identity)) continue;
      auto sink = make(def);
      if (!def.per_cgroup) {
        sink->bind({}, nullptr);
        def.global(ctx, *sink);
        continue;
      }
      // The info metric carries the identity itself; other series get the
      // configured identity labels (empty values are left out, as Prometheus would).
      const bool extra = !ctx.identity_labels.empty() && def.name != "memcg_cgroup_info";
      const auto emit = [&](const CgroupView& c, std::string_view id, const CadvisorLabels* kl) {
        if (kl) {
          cadvisor_key(*kl, def.profile == Profile::cadvisor, labels);
          sink->bind({}, &labels);
          def.per_cgroup(c, ctx, *sink);
          return;
        }
        labels.clear();
        if (extra)
          for (const auto& l : ctx.identity_labels)
            if (auto v = ctx.snap.identity(*c.id, l); !v.empty()) labels.emplace_back(l, v);
        sink->bind(id, extra ? &labels : nullptr);
        def.per_cgroup(c, ctx, *sink);
      };
      for (size_t i = 0; i < ctx.snap.cgroups.size(); ++i)
        emit(ctx.snap.cgroups[i], live_ids[i], cadvisor ? &kubelet[i] : nullptr);
      if (!kept_after_removal(def)) continue;
      for (size_t j = 0; j < removed.size(); ++j)
        emit((*ctx.snap.removed)[removed[j]], removed_ids[removed[j]], cadvisor ? &kubelet_removed[j] : nullptr);
    }
}

// Counts samples per family; for the series budget.
class CountingSink final : public SampleSink {
 public:
  void add_labels(double, std::span<const Label>) override { ++count; }
  void add_histogram(const prometheus::ClientMetric::Histogram&) override { ++count; }
  size_t count = 0;
};

}  // namespace

std::span<const MetricDef> metric_table() noexcept { return kTable; }

std::vector<prometheus::MetricFamily> collect_families(const ScrapeContext& ctx) {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(std::size(kTable) + cadvisor_table().size());
  std::vector<std::unique_ptr<FamilySink>> sinks;
  for_each_family(ctx, [&](const MetricDef& def) {
    out.push_back(prometheus::MetricFamily{std::string(def.name), std::string(def.help), def.type, {}});
    sinks.push_back(std::make_unique<FamilySink>(out.back()));
    return sinks.back().get();
  });
  std::erase_if(out, [](const prometheus::MetricFamily& f) { return f.metric.empty(); });
  return out;
}

namespace {
void render(const ScrapeContext& ctx, text::Buffer& out, Families which, std::vector<size_t>* starts = nullptr) {
  TextOut text(out);
  std::vector<std::unique_ptr<TextSink>> sinks;
  for_each_family(
      ctx,
      [&](const MetricDef& def) {
        if (starts) starts->push_back(out.size());  // families are written one after another
        sinks.push_back(std::make_unique<TextSink>(text, def));
        return sinks.back().get();
      },
      which);
}

// The std::string forms, for callers other than the scrape cache: the text
// is written into a buffer of its own and appended whole.
void render(const ScrapeContext& ctx, std::string& out, Families which) {
  text::Buffer b;
  render(ctx, b, which);
  out.append(b.view());
}
}  // namespace

void render_text(const ScrapeContext& ctx, std::string& out) { render(ctx, out, Families::all); }
void render_identity(const ScrapeContext& ctx, std::string& out) { render(ctx, out, Families::identity); }
void render_values(const ScrapeContext& ctx, std::string& out) { render(ctx, out, Families::values); }
void render_values(const ScrapeContext& ctx, text::Buffer& out, std::vector<size_t>* family_starts) {
  render(ctx, out, Families::values, family_starts);
}

// A block of every event counter present, for the series budget.
std::shared_ptr<const MemoryEvents> every_event() {
  auto ev = std::make_shared<MemoryEvents>();
  for (size_t k = 0; k < parse::ev_count; ++k) ev->events.present.set(k);
  ev->local = ev->events;
  ev->swap.emplace();
  for (size_t k = 0; k < parse::sev_count; ++k) ev->swap->present.set(k);
  return ev;
}

SeriesBudget series_per_cgroup(const config::Settings& settings, Profile profile, bool read_budget) {
  // Two synthetic cgroups with every probed file present and every key of
  // the allowlist printed by the kernel: one with no limit set and only
  // max_age reads, one with every limit set and every reason counted.
  auto shared = std::make_shared<config::Settings>(settings);
  auto id = std::make_shared<CgroupId>(CgroupId{"x", 1, 1, {}});
  auto make = [&](bool most) {
    auto rec = std::make_shared<StatRecord>();
    auto all = std::make_shared<parse::StatValues>();
    for (size_t k = 0; k < parse::kStatKeyCount; ++k) all->present.set(k);
    rec->values = rec->prev_values = all;
    rec->since_prev = std::chrono::seconds(1);
    for (size_t k = 0; k < lim_count; ++k) rec->limits[k] = parse::SingleValue{most ? 1u : 0u, !most && k >= lim_high};
    rec->peak = 1;
    CgroupView v{id.get(), shared.get(), {}, rec};
    v.probe.current = v.probe.swap = v.probe.current_max = 1;
    v.probe.current_rate = 0;
    v.probe.has_psi = true;
    v.probe.events = every_event();
    v.probe.psi.some.present = v.probe.psi.full.present = true;
    v.reads[static_cast<size_t>(cache::ReadReason::initial)] = 1;
    v.reads[static_cast<size_t>(cache::ReadReason::max_age)] = 1;
    if (most) v.reads.fill(1);
    return v;
  };
  SeriesBudget out;
  out.plus_unknown_keys = settings.stats.all || !settings.stats.unknown_names.empty();
  for (bool most : {false, true}) {
    Snapshot snap;
    snap.cgroups.push_back(make(most));
    DaemonStatus status;
    ProcessStats process;
    const ScrapeContext ctx{snap, TimePoint{}, status, process, "", "", {}, profile, read_budget};
    CountingSink sink;
    for (auto table : tables())
      for (const auto& def : table)
        if (def.per_cgroup && serves(def, profile)) def.per_cgroup(snap.cgroups.front(), ctx, sink);
    (most ? out.most : out.floor) = sink.count;
  }
  return out;
}

std::string metrics_reference_markdown() {
  std::string out = "| metric | profile | type | labels | meaning |\n|---|---|---|---|---|\n";
  for (auto table : tables())
    for (const auto& def : table) {
      std::string labels = def.per_cgroup && def.profile != Profile::cadvisor ? "cgroup_id" : "";
      if (!def.labels.empty()) labels += (labels.empty() ? "" : ", ") + std::string(def.labels);
      out += "| `" + std::string(def.name) + "` | " + std::string(config::profile_name(def.profile)) + " | " +
             std::string(type_name(def.type)) + " | " + labels + " | " + std::string(def.help) + " |\n";
    }
  return out;
}

}  // namespace memcg::exporter
