#include "tests/unit/prometheus_oracle.h"

#include <prometheus/text_serializer.h>

#include <memory>
#include <sstream>

#include "exporter/exposition/families.h"

namespace memcg::exporter::oracle {
namespace {

prometheus::MetricType type_of(MetricType t) {
  switch (t) {
    case MetricType::Counter: return prometheus::MetricType::Counter;
    case MetricType::Gauge: return prometheus::MetricType::Gauge;
    case MetricType::Summary: return prometheus::MetricType::Summary;
    case MetricType::Histogram: return prometheus::MetricType::Histogram;
    case MetricType::Untyped: break;
  }
  return prometheus::MetricType::Untyped;
}

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
      case prometheus::MetricType::Counter: m.counter.value = value; break;
      case prometheus::MetricType::Gauge: m.gauge.value = value; break;
      default: m.untyped.value = value; break;
    }
  }
  void add_histogram(const HistogramValue& h) override {
    auto& out = next({}).histogram;
    out.sample_count = h.sample_count;
    out.sample_sum = h.sample_sum;
    for (const auto& b : h.bucket) out.bucket.push_back({b.cumulative_count, b.upper_bound});
  }

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

}  // namespace

std::vector<prometheus::MetricFamily> collect_families(const ScrapeContext& ctx) {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(metric_table().size() + cadvisor_table().size());
  std::vector<std::unique_ptr<FamilySink>> sinks;
  for_each_family(ctx, [&](const MetricDef& def) {
    out.push_back(prometheus::MetricFamily{std::string(def.name), std::string(def.help), type_of(def.type), {}});
    sinks.push_back(std::make_unique<FamilySink>(out.back()));
    return sinks.back().get();
  });
  std::erase_if(out, [](const prometheus::MetricFamily& f) { return f.metric.empty(); });
  return out;
}

std::string text(const ScrapeContext& ctx) {
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, collect_families(ctx));
  return os.str();
}

}  // namespace memcg::exporter::oracle
