// The /metrics body for a fixture tree under a manual clock, compared with
// tests/golden/metrics.txt, plus the rules every metric of the table obeys.
// Regenerate after an intended change:
//   MEMCG_UPDATE_GOLDEN=1 ./build/tests/unit_tests --gtest_filter='Metrics.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "exporter/exposition/metrics.h"
#include "tests/unit/prometheus_oracle.h"
#include "plugin/collector.h"
#include "tests/fixtures/kubernetes.h"
#include "tests/fixtures/tree.h"
#include "tests/unit/golden.h"

namespace memcg::exporter {
namespace {

using namespace std::chrono_literals;

// cgroup_id is an inode number, different in every fixture tree: replaced by
// the cgroup's position in the snapshot so the golden file is stable.
std::string stable_ids(std::string text, const Snapshot& snap) {
  for (size_t i = 0; i < snap.cgroups.size(); ++i) {
    const std::string from = "cgroup_id=\"" + std::to_string(snap.cgroups[i].id->inode) + "\"";
    const std::string to = "cgroup_id=\"" + std::to_string(i + 1) + "\"";
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  }
  return text;
}

// Series per cgroup_id, and the lines without one.
std::map<std::string, size_t> series_by_cgroup(const std::string& text) {
  std::map<std::string, size_t> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t at = line.find("cgroup_id=\"");
    if (at == std::string::npos) continue;
    ++out[line.substr(at + 11, line.find('"', at + 11) - at - 11)];
  }
  return out;
}

TEST(Metrics, TableNamesHelpAndTypesFollowPrometheusConventions) {
  std::set<std::string_view> names;
  for (const auto& def : metric_table()) {
    EXPECT_TRUE(names.insert(def.name).second) << "duplicate " << def.name;
    EXPECT_TRUE(def.name.starts_with("memcg_") || def.name.starts_with("process_")) << def.name;
    for (char c : def.name) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << def.name;
    EXPECT_EQ(def.type == MetricType::Counter, def.name.ends_with("_total")) << def.name;
    // prometheus-cpp writes HELP verbatim: a backslash or newline would corrupt the exposition.
    EXPECT_EQ(def.help.find_first_of("\\\n"), std::string_view::npos) << def.name;
    EXPECT_FALSE(def.help.empty()) << def.name;
    EXPECT_TRUE((def.per_cgroup == nullptr) != (def.global == nullptr)) << def.name;
    // Ages change at every scrape: the default exposition serves the time a
    // thing happened instead (Prometheus' instrumentation guidelines).
    if (def.name.ends_with("_age_seconds") && def.name != "memcg_rule_max_age_seconds" &&
        def.name != "memcg_stat_max_age_seconds") {
      EXPECT_EQ(def.profile, config::Profile::full) << def.name;
    }
  }
}

TEST(Metrics, DocsMetricReferenceIsGeneratedFromTheTable) {
  std::ifstream in(std::string(MEMCG_SOURCE_DIR) + "/docs/metrics.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string table = metrics_reference_markdown();
  EXPECT_NE(ss.str().find(table), std::string::npos)
      << "docs/metrics.md's metric reference is out of date; replace it with:\n" << table;
}

// The golden files' scene: web.slice and a child whose name needs escaping,
// a rule with its own stats allowlist, two passes 2 s apart (pgfault and
// memory.current moved between them).
std::unique_ptr<Collector> golden_collector(fixtures::Tree& tree, ManualClock& clock) {
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
                       config::StatFilter{false, {}, {"new_kernel_key"}}, {}});
  cfg.resolve();
  clock.step = 1us;
  clock.cpu_step = 1us;
  auto c = std::make_unique<Collector>(tree.root(), cfg, clock);
  c->run_pass();
  clock.advance(2s);
  tree.set_stat("web.slice", tree.spec("web.slice").stat.set("pgfault", 3000));
  tree.set_current("web.slice", 66 << 20);
  c->run_pass();
  return c;
}

TEST(Metrics, GoldenExposition) {
  fixtures::Tree tree;
  ManualClock clock;
  const std::unique_ptr<Collector> collector = golden_collector(tree, clock);
  Collector& c = *collector;

  DaemonStatus status;
  status.last_scrape_seconds = 0.0125;
  status.reload_success_unix = 1700000000;
  ProcessStats proc;
  proc.cpu_seconds = 1.5;
  proc.open_fds = 12;
  const ScrapeContext ctx{*c.latest(), clock.peek() + 3s, status, proc, "1.2.3", "abcdef"};
  const std::string oracle = oracle::text(ctx);
  testing::compare_with_golden("metrics.txt", stable_ids(oracle, *c.latest()));

  // The full profile: every series of 0.1 (the path as `cgroup` on each) plus the new ones.
  const std::vector<std::string> full_labels{"cgroup"};
  const ScrapeContext full{*c.latest(), clock.peek() + 3s, status, proc, "1.2.3", "abcdef", full_labels, config::Profile::full};
  std::string full_text;
  render_text(full, full_text);
  testing::compare_with_golden("metrics-full.txt", stable_ids(full_text, *c.latest()));
  EXPECT_EQ(full_text, oracle::text(full));

  // The direct writer /metrics uses says exactly what prometheus-cpp says,
  // with and without identity labels copied onto every series.
  std::string direct;
  render_text(ctx, direct);
  EXPECT_EQ(direct, oracle);
  const std::vector<std::string> identity{"runtime", "unit"};
  const ScrapeContext with_ids{*c.latest(), clock.peek() + 3s, status, proc, "1.2.3", "abcdef", identity};
  std::string direct2;
  render_text(with_ids, direct2);
  EXPECT_EQ(direct2, oracle::text(with_ids));
  const std::string web_id = std::to_string(c.latest()->cgroups[1].id->inode);
  EXPECT_NE(direct2.find("memcg_memory_current_bytes{cgroup_id=\"" + web_id + "\",runtime=\"systemd\",unit=\"web.slice\"} "),
            std::string::npos) << direct2;
}

TEST(Metrics, NeverReadCgroupHasNoTimestampAndUnsetLimitsAreAbsent) {
  Snapshot snap;
  auto settings = std::make_shared<config::Settings>();
  snap.add_cgroup(std::make_shared<CgroupId>(CgroupId{"x", 1, 1, {}}), settings);
  auto rec = std::make_shared<StatRecord>();
  rec->read_at_wall = ManualClock::kWallStart;
  rec->limits[lim_max] = parse::SingleValue{0, true};
  rec->limits[lim_high] = parse::SingleValue{1 << 20, false};
  rec->limits[lim_low] = parse::SingleValue{0, false};
  snap.add_cgroup(std::make_shared<CgroupId>(CgroupId{"y", 2, 1, {}}), settings).stat = rec;
  DaemonStatus status;
  ProcessStats proc;
  const ScrapeContext ctx{snap, TimePoint{} + 1h, status, proc, "v", "r"};
  std::string text;
  render_text(ctx, text);
  EXPECT_EQ(text.find("memcg_stat_last_read_timestamp_seconds{cgroup_id=\"1\"}"), std::string::npos);
  EXPECT_NE(text.find("memcg_stat_last_read_timestamp_seconds{cgroup_id=\"2\"} 1700000000\n"), std::string::npos) << text;
  // Only the limits that are set: high here; max is unlimited, low is 0.
  EXPECT_NE(text.find("memcg_memory_limit_bytes{cgroup_id=\"2\",limit=\"high\"} 1048576\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("limit=\"max\""), std::string::npos) << text;
  EXPECT_EQ(text.find("limit=\"low\""), std::string::npos) << text;
  EXPECT_EQ(text.find("memcg_stat_age_seconds"), std::string::npos) << "the age is in the full profile only";

  const ScrapeContext full{snap, TimePoint{} + 1h, status, proc, "v", "r", {}, config::Profile::full};
  std::string full_text;
  render_text(full, full_text);
  EXPECT_NE(full_text.find("memcg_memory_limit_bytes{cgroup_id=\"2\",limit=\"max\"} +Inf"), std::string::npos) << full_text;
  EXPECT_NE(full_text.find("memcg_stat_age_seconds{cgroup_id=\"2\"}"), std::string::npos);
  EXPECT_EQ(full_text.find("memcg_stat_age_seconds{cgroup_id=\"1\"}"), std::string::npos);
}

TEST(Metrics, ReadsAppearPerReasonOnceTheyOccurredAndEventsKeepTheirZeros) {
  Snapshot snap;
  auto settings = std::make_shared<config::Settings>();
  CgroupView& v = snap.add_cgroup(std::make_shared<CgroupId>(CgroupId{"x", 7, 1, {}}), settings);
  v.stat = std::make_shared<StatRecord>();
  v.reads[static_cast<size_t>(cache::ReadReason::initial)] = 1;
  v.reads[static_cast<size_t>(cache::ReadReason::event)] = 2;
  // memory.events as 6.1 prints it: six keys, all 0.
  auto events = std::make_shared<MemoryEvents>();
  for (size_t k = 0; k <= parse::ev_oom_group_kill; ++k) events->events.present.set(k);
  v.probe.events = events;
  DaemonStatus status;
  ProcessStats proc;
  std::string text;
  render_text({snap, TimePoint{}, status, proc, "v", "r"}, text);
  EXPECT_NE(text.find("memcg_stat_reads_total{cgroup_id=\"7\",reason=\"event\"} 2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("cgroup_id=\"7\",reason=\"initial\""), std::string::npos) << "implied by the series' existence";
  EXPECT_EQ(text.find("cgroup_id=\"7\",reason=\"threshold\""), std::string::npos) << "never happened";
  // An OOM kill must be an increase from 0, not a series appearing at 1.
  for (const char* ev : {"high", "max", "oom", "oom_kill"})
    EXPECT_NE(text.find("memcg_memory_events_total{cgroup_id=\"7\",event=\"" + std::string(ev) + "\"} 0\n"), std::string::npos) << ev;
  EXPECT_EQ(text.find("event=\"low\""), std::string::npos);
}

TEST(Metrics, TheKernelsTermOfTheBoundAndItsFeaturesAreServedOncePerHost) {
  Snapshot snap;
  DaemonStatus status;
  ProcessStats proc;
  std::string text;
  render_text({snap, TimePoint{}, status, proc, "v", "r"}, text);
  EXPECT_EQ(text.find("memcg_kernel_"), std::string::npos) << "not probed: nothing said";
  fixtures::Tree t;
  t.add("a");
  snap.kernel = std::make_shared<const cgroupfs::KernelFacts>(cgroupfs::probe_kernel(t.root(), "6.12.117", {4096, 2}, cgroupfs::RootFs::cgroup2fs));
  text.clear();
  render_text({snap, TimePoint{}, status, proc, "v", "r", {}, config::Profile::lean}, text);
  EXPECT_NE(text.find("\nmemcg_kernel_stat_flush_threshold_bytes 524288\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmemcg_kernel_stat_lag_max_bytes 1048576\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmemcg_kernel_stat_flush_period_seconds 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmemcg_exporter_kernel_feature{feature=\"stat_flush_per_cgroup\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmemcg_exporter_kernel_feature{feature=\"memory_stat_zswap\"} 0\n"), std::string::npos) << text;
}

// The default profile's budget, counted on synthetic worst cases (every
// limit set, every read reason) for every profile, and measured on a
// Kubernetes-shaped tree with real path lengths.
TEST(Metrics, DefaultProfileStaysWithinThirtySeriesAndFourKilobytesPerCgroup) {
  const auto cfg = config::Config::builtin({4096, 2});
  config::Settings lean_settings = cfg.defaults;
  lean_settings.stats = config::StatFilter::defaults(config::Profile::lean);
  const SeriesBudget lean = series_per_cgroup(lean_settings, config::Profile::lean);
  const SeriesBudget standard = series_per_cgroup(cfg.defaults, config::Profile::standard);
  const SeriesBudget with_budget = series_per_cgroup(cfg.defaults, config::Profile::standard, true);
  EXPECT_LE(standard.most, 30u);
  EXPECT_LE(with_budget.most, 31u);
  EXPECT_LT(lean.most, standard.most);
  EXPECT_LE(lean.floor, 15u);
  EXPECT_LE(standard.floor, standard.most);
  EXPECT_FALSE(standard.plus_unknown_keys);
  config::Settings full_settings = cfg.defaults;
  full_settings.stats = config::StatFilter::defaults(config::Profile::full);
  EXPECT_GE(series_per_cgroup(full_settings, config::Profile::full).floor, 76u) << "full keeps 0.1's series";

  fixtures::Tree tree;
  const auto node = fixtures::add_kubernetes_node(tree, 400);
  ManualClock clock;
  Collector c(tree.root(), cfg, clock);
  c.run_pass();
  // Some containers grow past the threshold, one is OOM-killed; then enough
  // time passes for max_age reads of the rest.
  for (size_t i = 0; i < node.containers.size(); i += 10) {
    tree.set_current(node.containers[i], tree.spec(node.containers[i]).current + (4 << 20));
    tree.set_event(node.containers[i], "oom_kill", 1);
  }
  clock.advance(1s);
  c.run_pass();
  clock.advance(12s);
  c.run_pass();
  DaemonStatus status;
  ProcessStats proc;
  auto snap = c.latest();
  std::string text;
  render_text({*snap, clock.peek(), status, proc, "v", "r"}, text);
  const auto per = series_by_cgroup(text);
  ASSERT_EQ(per.size(), snap->cgroups.size());
  size_t most = 0;
  for (const auto& [id, n] : per) most = std::max(most, n);
  EXPECT_LE(most, 30u);
  EXPECT_LE(text.size() / snap->cgroups.size(), 4096u) << text.size() << " bytes for " << snap->cgroups.size() << " cgroups";
}

TEST(Metrics, EveryTableMetricIsInTheFullProfileAndLeanIsASubsetOfDefault) {
  std::set<std::string_view> full;
  for (const auto& def : metric_table()) {
    EXPECT_LE(def.profile, config::Profile::full);
    full.insert(def.name);
  }
  EXPECT_EQ(full.size(), metric_table().size());
  size_t lean = 0, standard = 0;
  for (const auto& def : metric_table()) {
    lean += def.profile == config::Profile::lean;
    standard += def.profile <= config::Profile::standard;
  }
  EXPECT_LT(lean, standard);
  EXPECT_LT(standard, full.size());
}

}  // namespace
}  // namespace memcg::exporter
