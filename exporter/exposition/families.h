// The walk every exposition shares: which families a profile serves, in
// table order, and for each its samples over the live cgroups and the
// removed ones it keeps. The text writer (text_writer.cpp), the series
// budget and the tests' prometheus-cpp oracle (tests/unit/prometheus_oracle.h)
// each give it their own sink. Internal to exporter/exposition.
#pragma once

#include <array>
#include <charconv>
#include <span>
#include <string_view>
#include <vector>

#include "exporter/exposition/cadvisor_metrics.h"
#include "exporter/exposition/metrics.h"

namespace memcg::exporter {

// The whole scrape, only memcg_cgroup_info (the identity, cached apart), or
// everything else.
enum class Families { all, identity, values };

// Whether a profile serves a metric of either table: lean, default and full
// each add to the one before; cadvisor serves its own table and the few of
// this exporter's series that say how fresh it is (served_with_cadvisor).
bool serves(const MetricDef& def, config::Profile p) noexcept;
// The exporter's table, then the cadvisor profile's.
std::array<std::span<const MetricDef>, 2> tables() noexcept;
// The kubelet's labels of every cgroup, for the cadvisor profile: computed
// once per scrape, then shared by its families.
std::vector<CadvisorLabels> all_cadvisor_labels(const Snapshot& snap, const PodNames& pods);
// A cgroup's labels in the cadvisor profile: the kubelet's six for its
// table, `id` alone for the exporter's own series, which join on it.
void cadvisor_key(const CadvisorLabels& l, bool compat, SampleSink::Labels& out);
// The families a removed cgroup keeps (tombstones.h): what names it and
// its counters; its gauges went with its memory.
bool kept_after_removal(const MetricDef& def) noexcept;
// The removed cgroups a scrape serves, as indexes into snap.removed.
std::vector<size_t> removed_served(const ScrapeContext& ctx);

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

// Runs every getter of the tables that the profile serves over the
// snapshot, per family: `make(def)` gives the family's sink, whose
// bind(cgroup_id, extra) points it at a cgroup.
template <typename MakeSink>
void for_each_family(const ScrapeContext& ctx, MakeSink&& make, Families which = Families::all) {
  using config::Profile;
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
      const bool identity = &def == metric_table().data();  // memcg_cgroup_info
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

}  // namespace memcg::exporter
