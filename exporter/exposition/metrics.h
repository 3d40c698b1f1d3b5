// The exposition's public side: the metric table's shape (every metric the
// exporter serves, with its name, type, HELP text, labels and the function
// that reads it from a snapshot, defined once in metric_table.cpp), the
// text writer (text_writer.cpp), the series budget (series_budget.cpp) and
// docs/metrics.md's reference (metrics_reference.cpp). The scrape, the
// reference and the golden tests all come from the one table.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/text/buffer.h"
#include "exporter/exposition/gate_stats.h"
#include "exporter/exposition/process_stats.h"
#include "plugin/clock.h"
#include "plugin/snapshot.h"

namespace memcg::exporter {

// Daemon state that becomes metrics; written by the daemon, read by scrapes.
struct DaemonStatus {
  std::atomic<bool> reload_ok{true};
  std::atomic<double> reload_success_unix{0};  // last successful (re)load, Unix seconds
  std::atomic<double> last_scrape_seconds{0};  // duration of the previous /metrics request
  std::atomic<uint64_t> pass_overruns{0};      // passes that took longer than probe_interval
  GateStats http;                              // the web server's connections
  ScrapeCpu scrape_cpu;                        // /metrics requests' CPU
};

// Everything a metric getter may look at.
struct ScrapeContext {
  const Snapshot& snap;
  TimePoint now;  // ages (full profile) are computed against this, at scrape time
  const DaemonStatus& status;
  const ProcessStats& process;
  std::string_view version, revision;
  std::span<const std::string> identity_labels = {};  // copied onto every per-cgroup series
  config::Profile profile = config::Profile::standard;
  bool read_budget = false;  // collector.max_stat_reads_per_second is set: max_age can be exceeded
};

// How many series one cgroup gets under a profile and a rule's settings:
// `floor` when no limit is set and memory.stat was read only for its age,
// `most` when every limit is set and every read reason occurred. Unknown
// memory.stat keys (stats = ["*"]) come on top. Counted by rendering
// synthetic cgroups through the metric table, so it cannot drift from it.
struct SeriesBudget {
  size_t floor = 0, most = 0;
  bool plus_unknown_keys = false;
};
SeriesBudget series_per_cgroup(const config::Settings& settings, config::Profile profile, bool read_budget = false);

using LabelList = std::initializer_list<std::pair<std::string_view, std::string_view>>;

// The exposition format's metric types (text format 0.0.4's TYPE line).
enum class MetricType { Counter, Gauge, Summary, Untyped, Histogram };
std::string_view type_name(MetricType t) noexcept;

// One histogram sample: cumulative bucket counts, the last bucket +Inf.
struct HistogramValue {
  struct Bucket {
    uint64_t cumulative_count = 0;
    double upper_bound = 0;
  };
  uint64_t sample_count = 0;
  double sample_sum = 0;
  std::vector<Bucket> bucket;
};

// Where a getter puts its samples. Per-cgroup getters get the cgroup_id label
// (and any configured identity labels) added by the sink.
class SampleSink {
 public:
  using Label = std::pair<std::string_view, std::string_view>;
  using Labels = std::vector<Label>;
  virtual ~SampleSink() = default;
  void add(double value, LabelList labels = {}) { add_labels(value, {labels.begin(), labels.size()}); }
  virtual void add_labels(double value, std::span<const Label> labels) = 0;
  virtual void add_histogram(const HistogramValue& h) = 0;
  // A label list a getter may fill and pass to add_labels, reused between
  // cgroups so dynamic label sets allocate nothing per sample.
  Labels& scratch() noexcept { return scratch_; }

 private:
  Labels scratch_;
};

struct MetricDef {
  std::string_view name;
  config::Profile profile;  // the leanest profile that serves it
  MetricType type;
  std::string_view labels;  // documentation: the label names besides "cgroup_id"
  std::string_view help;
  void (*per_cgroup)(const CgroupView&, const ScrapeContext&, SampleSink&) = nullptr;
  void (*global)(const ScrapeContext&, SampleSink&) = nullptr;
};

std::span<const MetricDef> metric_table() noexcept;

// Writes one scrape into `out` as text exposition 0.0.4 (text_writer.cpp),
// byte for byte what prometheus-cpp's TextSerializer writes for the same
// families (tests/unit/prometheus_oracle.h holds them equal), without
// building a prometheus-cpp object per sample: at 1600 cgroups that
// intermediate step cost ~200 ms of CPU per scrape.
void render_text(const ScrapeContext& ctx, std::string& out);

// render_text in two parts, identity first: the memcg_cgroup_info family,
// which changes only when cgroups, their rules or container records do, and
// everything else. render_identity + render_values == render_text.
void render_identity(const ScrapeContext& ctx, std::string& out);
void render_values(const ScrapeContext& ctx, std::string& out);
// ... appended to a kept buffer (the scrape cache's values text, grown
// without being zeroed: base/text/buffer.h), with the offset in `out` where
// each family's lines begin pushed to `family_starts` (a family without
// samples is an empty range), so that a family can be told apart unchanged.
void render_values(const ScrapeContext& ctx, text::Buffer& out, std::vector<size_t>* family_starts = nullptr);

// docs/metrics.md's metric reference, generated from the table.
std::string metrics_reference_markdown();

}  // namespace memcg::exporter
