#include "exporter/exposition/families.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>

namespace memcg::exporter {

using config::Profile;

// Whether a profile serves a metric of either table: lean, default and full
// each add to the one before; cadvisor serves its own table and the few of
// this exporter's series that say how fresh it is (served_with_cadvisor).
bool serves(const MetricDef& def, Profile p) noexcept {
  if (def.profile == Profile::cadvisor || p == Profile::cadvisor)
    return p == Profile::cadvisor && (def.profile == Profile::cadvisor || served_with_cadvisor(def));
  return def.profile <= p;
}

std::array<std::span<const MetricDef>, 2> tables() noexcept { return {metric_table(), cadvisor_table()}; }

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

}  // namespace memcg::exporter
