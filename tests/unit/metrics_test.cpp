// The /metrics body for a fixture tree under a manual clock, compared with
// tests/golden/metrics.txt, plus the rules every metric of the table obeys.
// Regenerate after an intended change:
//   MEMCG_UPDATE_GOLDEN=1 ./build/tests/unit_tests --gtest_filter='Metrics.*'
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "exporter/metrics.h"
#include "plugin/collector.h"
#include "tests/fixtures/tree.h"
#include "tests/unit/golden.h"

namespace memcg::exporter {
namespace {

using namespace std::chrono_literals;

TEST(Metrics, TableNamesHelpAndTypesFollowPrometheusConventions) {
  std::set<std::string_view> names;
  for (const auto& def : metric_table()) {
    EXPECT_TRUE(names.insert(def.name).second) << "duplicate " << def.name;
    EXPECT_TRUE(def.name.starts_with("memcg_") || def.name.starts_with("process_")) << def.name;
    for (char c : def.name) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << def.name;
    EXPECT_EQ(def.type == prometheus::MetricType::Counter, def.name.ends_with("_total")) << def.name;
    // prometheus-cpp writes HELP verbatim: a backslash or newline would corrupt the exposition.
    EXPECT_EQ(def.help.find_first_of("\\\n"), std::string_view::npos) << def.name;
    EXPECT_FALSE(def.help.empty()) << def.name;
    EXPECT_TRUE((def.per_cgroup == nullptr) != (def.global == nullptr)) << def.name;
  }
}

TEST(Metrics, ReadmeMetricReferenceIsGeneratedFromTheTable) {
  std::ifstream in(std::string(MEMCG_SOURCE_DIR) + "/README.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string table = metrics_reference_markdown();
  EXPECT_NE(ss.str().find(table), std::string::npos)
      << "README.md's metric reference is out of date; replace it with:\n" << table;
}

TEST(Metrics, GoldenExposition) {
  fixtures::Tree tree;
  fixtures::CgroupSpec web;
  web.current = 64 << 20;
  web.peak = 80 << 20;
  web.max = "134217728";
  web.stat.set("anon", 48 << 20).set("file", 16 << 20).set("pgfault", 1000).set("new_kernel_key", 5);
  web.pressure = fixtures::kernel_file("work", "memory.pressure");
  tree.add("web.slice", web);
  fixtures::CgroupSpec odd = web;
  odd.swap = std::nullopt;
  tree.add("web.slice/we\"ird\\name.service", odd);  // label values get escaped

  auto cfg = config::Config::builtin({4096, 2});
  cfg.defaults.stats = config::StatFilter::defaults();
  cfg.rules.push_back({*config::Glob::compile("web.slice/*", nullptr), std::nullopt, std::nullopt,
                       config::StatFilter{false, {}, {"new_kernel_key"}}});
  cfg.resolve();
  ManualClock clock;
  clock.step = 1us;
  clock.cpu_step = 1us;
  Collector c(tree.root(), cfg, clock);
  c.run_pass();
  clock.advance(2s);
  tree.set_stat("web.slice", tree.spec("web.slice").stat.set("pgfault", 3000));
  tree.set_current("web.slice", 66 << 20);
  c.run_pass();

  DaemonStatus status;
  status.last_scrape_seconds = 0.0125;
  status.reload_success_unix = 1700000000;
  ProcessStats proc;
  proc.cpu_seconds = 1.5;
  proc.open_fds = 12;
  const ScrapeContext ctx{*c.latest(), clock.peek() + 3s, status, proc, "1.2.3", "abcdef"};
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, collect_families(ctx));
  testing::compare_with_golden("metrics.txt", os.str());

  // The direct writer /metrics uses says exactly what prometheus-cpp says,
  // with and without identity labels copied onto every series.
  std::string direct;
  render_text(ctx, direct);
  EXPECT_EQ(direct, os.str());
  const std::vector<std::string> identity{"runtime", "unit"};
  const ScrapeContext with_ids{*c.latest(), clock.peek() + 3s, status, proc, "1.2.3", "abcdef", identity};
  std::ostringstream os2;
  prometheus::TextSerializer().Serialize(os2, collect_families(with_ids));
  std::string direct2;
  render_text(with_ids, direct2);
  EXPECT_EQ(direct2, os2.str());
  EXPECT_NE(direct2.find("memcg_memory_current_bytes{cgroup=\"web.slice\",runtime=\"systemd\",unit=\"web.slice\"} "),
            std::string::npos);
}

TEST(Metrics, NeverReadCgroupHasNoAgeAndUnlimitedIsInf) {
  Snapshot snap;
  auto settings = std::make_shared<config::Settings>();
  snap.cgroups.push_back(CgroupView{std::make_shared<CgroupId>(CgroupId{"x", 1, 1, {}}), settings, {}, nullptr});
  auto rec = std::make_shared<StatRecord>();
  rec->limits[lim_max] = parse::SingleValue{0, true};
  snap.cgroups.push_back(CgroupView{std::make_shared<CgroupId>(CgroupId{"y", 2, 1, {}}), settings, {}, rec});
  DaemonStatus status;
  ProcessStats proc;
  const ScrapeContext ctx{snap, TimePoint{} + 1h, status, proc, "v", "r"};
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, collect_families(ctx));
  const std::string text = os.str();
  EXPECT_EQ(text.find("memcg_stat_age_seconds{cgroup=\"x\"}"), std::string::npos);
  EXPECT_NE(text.find("memcg_stat_age_seconds{cgroup=\"y\"}"), std::string::npos);
  EXPECT_NE(text.find("memcg_memory_limit_bytes{cgroup=\"y\",limit=\"max\"} +Inf"), std::string::npos) << text;
}

}  // namespace
}  // namespace memcg::exporter
