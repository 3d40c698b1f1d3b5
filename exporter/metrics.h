// The metric table: every metric the exporter serves, with its name, type,
// HELP text, labels and the function that reads it from a snapshot — the one
// place they are defined. The scrape, the README's metric reference and the
// golden test all come from it.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/process_stats.h"
#include "plugin/clock.h"
#include "plugin/snapshot.h"

namespace memcg::exporter {

// Daemon state that becomes metrics; written by the daemon, read by scrapes.
struct DaemonStatus {
  std::atomic<bool> reload_ok{true};
  std::atomic<double> reload_success_unix{0};  // last successful (re)load, Unix seconds
  std::atomic<double> last_scrape_seconds{0};  // duration of the previous /metrics request
};

// Everything a metric getter may look at.
struct ScrapeContext {
  const Snapshot& snap;
  TimePoint now;  // ages are computed against this, at scrape time
  const DaemonStatus& status;
  const ProcessStats& process;
  std::string_view version, revision;
  std::span<const std::string> identity_labels = {};  // copied onto every per-cgroup series
};

// The value of identity label `label` (see config::kIdentityLabels) for a cgroup:
// from its path, or from the OCI hook record of its container.
std::string_view identity_value(const Snapshot& snap, const CgroupId& id, std::string_view label);

using LabelList = std::initializer_list<std::pair<std::string_view, std::string_view>>;

// Where a getter puts its samples. Per-cgroup getters get the cgroup label
// (and any configured identity labels) added by the sink.
class SampleSink {
 public:
  using Labels = std::vector<std::pair<std::string_view, std::string_view>>;
  virtual ~SampleSink() = default;
  virtual void add(double value, LabelList labels = {}) = 0;
  virtual void add_histogram(const prometheus::ClientMetric::Histogram& h) = 0;
};

struct MetricDef {
  std::string_view name;
  prometheus::MetricType type;
  std::string_view labels;  // documentation: the label names besides "cgroup"
  std::string_view help;
  void (*per_cgroup)(const CgroupView&, const ScrapeContext&, SampleSink&) = nullptr;
  void (*global)(const ScrapeContext&, SampleSink&) = nullptr;
};

std::span<const MetricDef> metric_table() noexcept;

// Builds the families of one scrape as prometheus-cpp objects (families
// without samples are left out).
std::vector<prometheus::MetricFamily> collect_families(const ScrapeContext& ctx);

// Writes the same scrape straight into `out` as text exposition 0.0.4, byte
// for byte what prometheus-cpp's TextSerializer writes for collect_families()
// (a test holds them equal), without building a ClientMetric per sample: at
// 1600 cgroups that intermediate step cost ~200 ms of CPU per scrape.
void render_text(const ScrapeContext& ctx, std::string& out);

// The prometheus-cpp view of a scrape: a Collectable over one snapshot and
// the daemon state, so the families can go through any prometheus-cpp
// serializer or registry.
class SnapshotCollectable final : public prometheus::Collectable {
 public:
  explicit SnapshotCollectable(const ScrapeContext& ctx) : ctx_(ctx) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return collect_families(ctx_); }

 private:
  const ScrapeContext& ctx_;
};

// The README's metric reference, generated from the table.
std::string metrics_reference_markdown();

}  // namespace memcg::exporter
