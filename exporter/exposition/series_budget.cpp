// How many series a cgroup gets under a profile (metrics.h:
// series_per_cgroup), counted by running the table over synthetic cgroups.
#include <memory>

#include "exporter/exposition/families.h"

namespace memcg::exporter {
namespace {

using config::Profile;

// Counts samples per family; for the series budget.
class CountingSink final : public SampleSink {
 public:
  void add_labels(double, std::span<const Label>) override { ++count; }
  void add_histogram(const HistogramValue&) override { ++count; }
  size_t count = 0;
};

// A block of every event counter present.
std::shared_ptr<const MemoryEvents> every_event() {
  auto ev = std::make_shared<MemoryEvents>();
  for (size_t k = 0; k < parse::ev_count; ++k) ev->events.present.set(k);
  ev->local = ev->events;
  ev->swap.emplace();
  for (size_t k = 0; k < parse::sev_count; ++k) ev->swap->present.set(k);
  return ev;
}

}  // namespace

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

}  // namespace memcg::exporter
