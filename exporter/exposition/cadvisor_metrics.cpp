#include "exporter/exposition/cadvisor_metrics.h"

#include <utility>

#include "base/parse/stat_keys.h"

namespace memcg::exporter {
namespace {

using config::Profile;

using Sink = SampleSink;
using Ctx = ScrapeContext;
using CV = CgroupView;

double num(uint64_t v) { return static_cast<double>(v); }

// The memory.stat keys cAdvisor's memory series are made of, by index.
struct Keys {
  size_t anon, file, file_mapped, inactive_file, pgfault, pgmajfault;
};
const Keys& keys() {
  static const Keys k = [] {
    const auto at = [](std::string_view name) -> size_t { return *parse::stat_key_table().find(name); };
    return Keys{at("anon"), at("file"), at("file_mapped"), at("inactive_file"), at("pgfault"), at("pgmajfault")};
  }();
  return k;
}

// A memory.stat value of the last read, when the kernel printed the key.
std::optional<uint64_t> stat_value(const CV& c, size_t k) {
  if (!c.stat || !c.stat->values->present.test(k)) return std::nullopt;
  return c.stat->values->values[k];
}

void add_stat(const CV& c, size_t k, Sink& s) {
  if (auto v = stat_value(c, k)) s.add(num(*v));
}

// cAdvisor's specMemoryValue: above 2^62 (the kernel's "max", rounded) is
// unlimited, exported as 0. Only where the cgroup has the file (the root has none).
void add_spec(const CV& c, LimitKind k, Sink& s) {
  if (!c.stat || !c.stat->limits[k]) return;
  const auto& l = *c.stat->limits[k];
  s.add(l.unlimited || l.value > (uint64_t{1} << 62) ? 0 : num(l.value));
}

#define MEMCG_CADVISOR_CACHED " Cached: read at memcg_stat_last_read_timestamp_seconds{id}."

// clang-format off
const MetricDef kCadvisorTable[] = {
  {"container_memory_usage_bytes", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's usage on cgroup v2: memory.current, read every probe.",
   [](const CV& c, const Ctx&, Sink& s) { if (c.probe.current) s.add(num(*c.probe.current)); }},
  {"container_memory_working_set_bytes", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's working set on cgroup v2: memory.current minus memory.stat inactive_file, 0 if that is negative; memory.current from the last probe." MEMCG_CADVISOR_CACHED,
   [](const CV& c, const Ctx&, Sink& s) {
     if (!c.probe.current || !c.stat) return;
     const uint64_t inactive = stat_value(c, keys().inactive_file).value_or(0);
     s.add(*c.probe.current < inactive ? 0 : num(*c.probe.current - inactive));
   }},
  {"container_memory_rss", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's RSS on cgroup v2: memory.stat anon." MEMCG_CADVISOR_CACHED,
   [](const CV& c, const Ctx&, Sink& s) { add_stat(c, keys().anon, s); }},
  {"container_memory_cache", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's page cache on cgroup v2: memory.stat file." MEMCG_CADVISOR_CACHED,
   [](const CV& c, const Ctx&, Sink& s) { add_stat(c, keys().file, s); }},
  {"container_memory_mapped_file", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's mapped files on cgroup v2: memory.stat file_mapped." MEMCG_CADVISOR_CACHED,
   [](const CV& c, const Ctx&, Sink& s) { add_stat(c, keys().file_mapped, s); }},
  {"container_memory_swap", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's swap on cgroup v2: memory.swap.current (0 without swap accounting), read every probe.",
   [](const CV& c, const Ctx&, Sink& s) { if (c.probe.current) s.add(num(c.probe.swap.value_or(0))); }},
  {"container_memory_kernel_usage", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "Always 0 on cgroup v2, as cAdvisor reports it (its source is cgroup v1's memory.kmem.usage_in_bytes); the kernel's memory is memcg_memory_stat_bytes{stat=\"kernel\"} in the other profiles.",
   [](const CV& c, const Ctx&, Sink& s) { if (c.probe.current) s.add(0); }},
  {"container_memory_max_usage_bytes", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's maximum usage on cgroup v2: memory.peak (kernel 5.19+; 0 without it), read with memory.stat when usage moved." MEMCG_CADVISOR_CACHED,
   [](const CV& c, const Ctx&, Sink& s) { if (c.stat) s.add(num(c.stat->peak.value_or(0))); }},
  {"container_memory_failures_total", Profile::cadvisor, MetricType::Counter, "id, name, image, container, pod, namespace, failure_type, scope",
   "cAdvisor's memory failures on cgroup v2: memory.stat pgfault and pgmajfault (failure_type), the same value for scope=container and scope=hierarchy (cgroup v2 is hierarchical)." MEMCG_CADVISOR_CACHED,
   [](const CV& c, const Ctx&, Sink& s) {
     for (auto [type, k] : {std::pair<std::string_view, size_t>{"pgfault", keys().pgfault}, {"pgmajfault", keys().pgmajfault}})
       if (auto v = stat_value(c, k))
         for (std::string_view scope : {"container", "hierarchy"}) s.add(num(*v), {{"failure_type", type}, {"scope", scope}});
   }},
  {"container_oom_events_total", Profile::cadvisor, MetricType::Counter, "id, name, image, container, pod, namespace",
   "OOM kills in the cgroup: memory.events oom_kill, served within milliseconds of the kernel counting it, and kept for metrics.removed_retention after the cgroup is removed (cAdvisor counts the kernel log's OOM kills per container and drops the series with the container).",
   [](const CV& c, const Ctx&, Sink& s) {
     if (c.probe.events)
       if (auto v = c.probe.events->events.get(parse::ev_oom_kill)) s.add(num(*v));
   }},
  {"container_spec_memory_limit_bytes", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's memory limit on cgroup v2: memory.max, 0 when unlimited; read with memory.stat at most every collector.limits_max_age.",
   [](const CV& c, const Ctx&, Sink& s) { add_spec(c, lim_max, s); }},
  {"container_spec_memory_reservation_limit_bytes", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's memory reservation on cgroup v2: memory.min, 0 when unset; read with memory.stat at most every collector.limits_max_age.",
   [](const CV& c, const Ctx&, Sink& s) { add_spec(c, lim_min, s); }},
  {"container_spec_memory_swap_limit_bytes", Profile::cadvisor, MetricType::Gauge, "id, name, image, container, pod, namespace",
   "cAdvisor's swap limit on cgroup v2: memory.swap.max, 0 when unlimited; read with memory.stat at most every collector.limits_max_age.",
   [](const CV& c, const Ctx&, Sink& s) { add_spec(c, lim_swap_max, s); }},
  {"container_pressure_memory_waiting_seconds_total", Profile::cadvisor, MetricType::Counter, "id, name, image, container, pod, namespace",
   "Time at least one task of the cgroup waited on memory: memory.pressure some total, in seconds (read when usage or memory.events moved, else every collector.limits_max_age).",
   [](const CV& c, const Ctx&, Sink& s) { if (c.probe.has_psi && c.probe.psi.some.present) s.add(num(c.probe.psi.some.total_us) / 1e6); }},
  {"container_pressure_memory_stalled_seconds_total", Profile::cadvisor, MetricType::Counter, "id, name, image, container, pod, namespace",
   "Time all non-idle tasks of the cgroup stalled on memory: memory.pressure full total, in seconds (read when usage or memory.events moved, else every collector.limits_max_age).",
   [](const CV& c, const Ctx&, Sink& s) { if (c.probe.has_psi && c.probe.psi.full.present) s.add(num(c.probe.psi.full.total_us) / 1e6); }},
};
// clang-format on
#undef MEMCG_CADVISOR_CACHED

}  // namespace

std::span<const MetricDef> cadvisor_table() noexcept { return kCadvisorTable; }

bool served_with_cadvisor(const MetricDef& def) noexcept {
  if (def.per_cgroup)
    return def.name == "memcg_cgroup_info" || def.name == "memcg_stat_last_read_timestamp_seconds" ||
           def.name == "memcg_cgroup_removed_timestamp_seconds";
  return def.profile == Profile::lean;
}

PodNames pod_names(const Snapshot& snap) {
  PodNames out;
  if (!snap.records) return out;
  for (const auto& c : snap.cgroups) {
    const runtime::ContainerRecord* r = snap.record_for(*c.id);
    const std::string_view uid = snap.identity(*c.id, "pod_uid");
    if (r && !uid.empty() && !r->pod.empty()) out.try_emplace(uid, r->pod, r->namespace_);
  }
  return out;
}

CadvisorLabels cadvisor_labels(const Snapshot& snap, const CgroupView& c, const PodNames& pods) {
  CadvisorLabels l;
  const CgroupId& id = *c.id;
  l.id = id.path.empty() || id.path == "/" ? "/" : "/" + id.path;
  const std::string_view runtime = id.identity.runtime, container_id = id.identity.container_id;
  const runtime::ContainerRecord* r = snap.record_for(id);
  // cAdvisor's handlers list the runtime's own name first among a
  // container's aliases: Docker's (and podman's, through the Docker API) is
  // the container's name; containerd's and CRI-O's is its id.
  if (!container_id.empty()) l.name = (runtime == "docker" || runtime == "podman") && r && !r->name.empty() ? r->name : container_id;
  if (r) {
    l.image = r->image;
    l.pod = r->pod;
    l.namespace_ = r->namespace_;
    if (!r->pod.empty() && !r->sandbox) l.container = r->name;
  } else if (container_id.empty()) {
    // A pod's own cgroup: the kubelet names it after its pod.
    if (auto it = pods.find(snap.identity(id, "pod_uid")); it != pods.end()) {
      l.pod = it->second.first;
      l.namespace_ = it->second.second;
    }
  }
  return l;
}

}  // namespace memcg::exporter
