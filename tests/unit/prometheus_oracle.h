// The exposition-format oracle: the same families as the exporter's text
// writer, built as prometheus-cpp objects and written by prometheus-cpp's own
// TextSerializer. The golden test holds render_text byte-equal to it, so the
// writer /metrics uses is checked against the library's reading of format
// 0.0.4; the benchmark prices the path not taken. Tests only: production
// never builds a prometheus-cpp object.
#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "exporter/exposition/metrics.h"

namespace memcg::exporter::oracle {

// The families of one scrape (families without samples left out).
std::vector<prometheus::MetricFamily> collect_families(const ScrapeContext& ctx);
// What prometheus-cpp's TextSerializer writes for them.
std::string text(const ScrapeContext& ctx);

}  // namespace memcg::exporter::oracle
