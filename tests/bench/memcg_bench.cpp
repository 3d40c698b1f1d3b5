// memcg-bench: the update-aware cache against the naive re-read-everything
// mode, side by side in one run, on a synthetic Kubernetes-shaped tree of N
// cgroups on tmpfs (real 6.1 memory.stat bodies, files changed in place).
//
// Each scenario runs T simulated 1 s ticks (a manual clock: no sleeping; CPU is
// measured with CLOCK_THREAD_CPUTIME_ID around each pass). Per tick a chosen
// share of the container cgroups grows by more than its threshold, and so do
// its ancestors. Reported per scenario, for the cached and the naive mode:
//   reads/tick   memory.stat reads per pass, vs the ideal:
//                N / max_age + cgroups whose change crossed their threshold
//   pass CPU     per pass, vs a bare loop that only preads memory.current on
//                kept-open fds (the physical floor of any probe)
//   scrape       CPU and bytes of one /metrics render of the cached snapshot
// plus RSS at the end. On tmpfs a memory.stat read costs what any small file
// read costs; on a real kernel it also pays the rstat flush (see the VM
// stage-1 VMCOST line), so read counts are what carries over, not CPU ratios.
//
// Usage: memcg-bench [--cgroups N] [--ticks T] [--busy 0,1,5,100] [--dir DIR]
//        memcg-bench --use-root DIR [--ticks T]
//        memcg-bench --scrape-only 1 [--cgroups N] [--ticks T] [--busy 1]
// --scrape-only runs one collector (14 fds per cgroup instead of 42) and
// measures scrapes per profile (the median of 5): series and bytes per
// cgroup, render and gzip CPU, and what a second scraper of the same
// snapshot costs.
// --use-root runs the same comparison over an existing cgroup tree (a real
// cgroup2 mount: the stage-1 VM runs it on 1000 real cgroups) without
// writing anything: the 0 % scenario only, with the kernel's real read costs.
#include "tests/unit/prometheus_oracle.h"
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "exporter/exposition/metrics.h"
#include "exporter/http/scrape_cache.h"
#include "plugin/cgroupfs/rlimit.h"
#include "plugin/cgroup_files.h"
#include "plugin/collector.h"
#include "tests/bench/thread_cpu.h"
#include "tests/fixtures/kubernetes.h"
#include "tests/fixtures/tree.h"
#include "tests/unit/alloc_counter.h"

using namespace memcg;
using namespace std::chrono_literals;

using memcg::bench::thread_cpu_seconds;

namespace {

double rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string k;
  while (in >> k)
    if (k == "VmRSS:") {
      double kb;
      in >> kb;
      return kb / 1024;
    }
  return 0;
}

using Layout = fixtures::KubernetesNode;

// What one scrape costs and weighs under a profile: render, gzip (as
// Prometheus asks), and a second scraper of the same snapshot (served from
// the shared body).
struct ScrapeCost {
  std::string profile;
  double series_avg = 0, series_max = 0, bytes = 0, gzip_bytes = 0;
  double first_cpu = 0;   // render + compress everything (the first scrape, or after the cgroups changed)
  double scrape_cpu = 0;  // a later snapshot: the identity head reused
  double render_cpu = 0;  // the text alone
  double second_cpu = 0;  // a second scraper of the same snapshot
  size_t cgroups = 0;
};

// `with_path`: the path as `cgroup` on every series (the full profile's, and
// 0.1's, label), to show what the short cgroup_id label saves.
ScrapeCost measure_scrape(const Snapshot& snap, TimePoint now, config::Profile profile, bool with_path = false) {
  exporter::DaemonStatus status;
  exporter::ProcessStats proc;
  const std::vector<std::string> path_label{"cgroup"};
  with_path = with_path || profile == config::Profile::full;
  const exporter::ScrapeContext ctx{snap, now, status, proc, "bench", "bench",
                                    with_path ? std::span<const std::string>(path_label) : std::span<const std::string>(),
                                    profile};
  ScrapeCost c;
  c.profile = std::string(config::profile_name(profile));
  if (profile == config::Profile::full) c.profile += " (the run's stats allowlist)";
  else if (with_path) c.profile += ", path on every series";
  c.cgroups = snap.cgroups.size();
  // A scrape as the daemon's /metrics does it, with a cache that already
  // served the scrape before (a different snapshot, the same cgroups): the
  // identity head is reused, the values are rendered and compressed.
  exporter::ScrapeCache cache;
  std::string text;
  const exporter::ScrapeCache::Render render{[&](std::string& out) { exporter::render_identity(ctx, out); },
                                             [&](text::Buffer& out, std::vector<size_t>& starts) { exporter::render_values(ctx, out, &starts); }};
  double t0 = thread_cpu_seconds();
  (void)cache.get(snap, {snap.pass - 1, nullptr}, true, render);
  c.first_cpu = thread_cpu_seconds() - t0;
  t0 = thread_cpu_seconds();
  const auto body = cache.get(snap, {snap.pass, nullptr}, true, render);
  c.scrape_cpu = thread_cpu_seconds() - t0;
  c.gzip_bytes = static_cast<double>(body.bytes->size());
  t0 = thread_cpu_seconds();
  (void)cache.get(snap, {snap.pass, nullptr}, true, render);
  c.second_cpu = thread_cpu_seconds() - t0;
  t0 = thread_cpu_seconds();
  exporter::render_text(ctx, text);
  c.render_cpu = thread_cpu_seconds() - t0;
  c.bytes = static_cast<double>(text.size());
  // Series per cgroup, by its key label: cgroup_id, or the cadvisor profile's id.
  const std::string key = profile == config::Profile::cadvisor ? "id=\"" : "{cgroup_id=\"";
  std::map<std::string, size_t> per;
  for (size_t pos = 0; (pos = text.find(key, pos)) != std::string::npos;) {
    const size_t start = pos + key.size(), end = text.find('"', start);
    if (key[0] == '{' || text[pos - 1] == '{' || text[pos - 1] == ',') ++per[text.substr(start, end - start)];
    pos = end;
  }
  for (const auto& [id, n] : per) {
    c.series_avg += static_cast<double>(n);
    c.series_max = std::max(c.series_max, static_cast<double>(n));
  }
  c.series_avg /= static_cast<double>(std::max<size_t>(1, per.size()));
  return c;
}

struct ModeResult {
  double reads = 0, cpu = 0, max_reads = 0;
  double allocs = 0;  // heap allocations made during the passes
};

struct Row {
  double busy_pct;
  double ideal;
  ModeResult cached, naive;
  double floor_cpu;
  double probe_only_cpu;  // a collector that never re-reads memory.stat: the probe pass alone
  double scrape_cpu, scrape_bytes, scrape_cpu_pcpp;
};

// A collected cgroup keeps 9 descriptors while there is room (its directory,
// the 6 kept files, memory.swap.events and cgroup.events; the limit files and
// memory.events.local are opened per read); the bench sets no fd budget.
constexpr uint64_t kFdsPerCgroup = kMaxFdsPerCgroup;

struct Options {
  int n = 10000, ticks = 60;
  std::vector<double> busy{0, 1, 5, 100};
  std::string dir, use_root;
  bool scrape_only = false;
};

std::optional<Options> parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--use-root") o.use_root = v;
    else if (k == "--scrape-only") o.scrape_only = v == "1";
    else if (k == "--cgroups") o.n = std::atoi(v.c_str());
    else if (k == "--ticks") o.ticks = std::atoi(v.c_str());
    else if (k == "--dir") o.dir = v;
    else if (k == "--busy") {
      o.busy.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) o.busy.push_back(std::atof(x.c_str()));
    } else {
      return std::nullopt;
    }
  }
  if (!o.use_root.empty()) {  // an existing tree: read only, the 0 % scenario
    o.dir = o.use_root;
    o.busy = {0};
    o.n = 0;
    for (auto it = std::filesystem::recursive_directory_iterator(o.dir); it != std::filesystem::recursive_directory_iterator(); ++it)
      o.n += it->is_directory() ? 1 : 0;
  }
  if (o.dir.empty()) o.dir = (std::filesystem::exists("/dev/shm") ? std::string("/dev/shm") : std::string("/tmp")) +
                             "/memcg-bench-" + std::to_string(getpid());
  return o;
}

// `pct` % of the containers (seeded, or all of them at 100 %) grow past
// `threshold`: memory.current, and with `stat_too` memory.stat's anon and
// pgfault, plus their ancestors' memory.current when `ancestors_too`.
// Returns the cgroups that crossed (with the root when any did).
std::set<std::string> grow(fixtures::Tree& tree, const Layout& layout, double pct, uint64_t threshold, unsigned& seed,
                           bool with_stat_and_ancestors) {
  std::set<std::string> crossed;
  const size_t k = static_cast<size_t>(static_cast<double>(layout.containers.size()) * pct / 100.0);
  for (size_t i = 0; i < k; ++i) {
    seed = seed * 1103515245u + 12345u;
    const size_t c = pct >= 100 ? i : (seed >> 8) % layout.containers.size();
    const std::string& cg = layout.containers[c];
    crossed.insert(cg);
    auto& spec = tree.spec(cg);
    if (with_stat_and_ancestors) {
      spec.stat.add("anon", threshold + 4096).add("pgfault", 10);
      tree.set_stat(cg, spec.stat);
    }
    tree.set_current(cg, spec.current + threshold + 4096);
    if (!with_stat_and_ancestors) continue;
    for (const auto& a : layout.ancestors[c])
      if (crossed.insert(a).second || pct >= 100) tree.set_current(a, tree.spec(a).current + threshold + 4096);
  }
  if (k > 0) crossed.insert("/");  // the root sees its subtree
  return crossed;
}

void print_scrape_costs(const std::vector<ScrapeCost>& costs) {
  std::printf("| profile | series per cgroup (mean / most) | text per cgroup | gzip per cgroup | text render | first gzip scrape | gzip scrape | gzip scrape per 1,000 cgroups | a second scraper |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& c : costs) {
    const double k = static_cast<double>(c.cgroups) / 1000.0;
    std::printf("| %s | %.1f / %.0f | %.0f B | %.0f B | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.3f ms |\n", c.profile.c_str(),
                c.series_avg, c.series_max, c.bytes / static_cast<double>(c.cgroups), c.gzip_bytes / static_cast<double>(c.cgroups),
                c.render_cpu * 1e3, c.first_cpu * 1e3, c.scrape_cpu * 1e3, c.scrape_cpu * 1e3 / k, c.second_cpu * 1e3);
  }
}

// --scrape-only: one collector (the daemon's default configuration) over
// ticks with the first busy share changing, then scrapes per profile, the
// median of 5 by gzip-scrape CPU (single measurements on a shared host vary
// by tens of percent from one minute to the next).
void scrape_only(const Options& o, fixtures::Tree& tree, const Layout& layout) {
  auto cfg = config::Config::builtin(config::HostFacts::probe());
  cfg.containers.records_dir = "";
  cfg.collector.rescan_interval = 1h;
  cfg.resolve();
  ManualClock clock;
  Collector col(o.dir, cfg, clock);
  col.run_pass();
  unsigned seed = 12345;
  for (int t = 0; t < o.ticks; ++t) {
    grow(tree, layout, o.busy.front(), cfg.defaults.threshold, seed, false);
    clock.advance(1s);
    col.run_pass();
  }
  std::vector<ScrapeCost> costs;
  for (int row = 0; row < 5; ++row) {
    const config::Profile p = row == 3 ? config::Profile::standard : row == 4 ? config::Profile::cadvisor : static_cast<config::Profile>(row);
    std::vector<ScrapeCost> runs;
    for (int k = 0; k < 5; ++k) runs.push_back(measure_scrape(*col.latest(), clock.peek(), p, row == 3));
    std::sort(runs.begin(), runs.end(), [](const ScrapeCost& a, const ScrapeCost& b) { return a.scrape_cpu < b.scrape_cpu; });
    costs.push_back(runs[2]);
  }
  std::printf("\n");
  print_scrape_costs(costs);
}

// The floor: one pread of memory.current per cgroup on kept-open fds.
class FloorLoop {
 public:
  FloorLoop(const std::string& dir, const Layout& layout) {
    for (const auto& cg : layout.all) fds_.push_back(::open((dir + "/" + cg + "/memory.current").c_str(), O_RDONLY | O_CLOEXEC));
  }
  ~FloorLoop() {
    for (int fd : fds_) ::close(fd);
  }
  double pass() {
    char buf[64];
    const double t0 = thread_cpu_seconds();
    for (int fd : fds_)
      if (::pread(fd, buf, sizeof buf, 0) < 0) std::perror("pread");
    return thread_cpu_seconds() - t0;
  }

 private:
  std::vector<int> fds_;
};

// The cached, the naive and the probe-only collector over the same tree.
struct Collectors {
  explicit Collectors(const std::string& dir, std::chrono::seconds max_age)
      : cfg(make(max_age, std::nullopt)), naive_cfg(make(max_age, 0)), probe_cfg(make(std::chrono::hours(24 * 365), uint64_t{1} << 50)),
        cached(dir, cfg, clock_c), naive(dir, naive_cfg, clock_n), probe_only(dir, probe_cfg, clock_p) {
    cached.run_pass();  // initial reads of everything: not measured
    naive.run_pass();
    probe_only.run_pass();
  }
  static config::Config make(Duration max_age, std::optional<uint64_t> threshold) {
    auto c = config::Config::builtin(config::HostFacts::probe());
    c.defaults.max_age = max_age;
    c.collector.rescan_interval = 1h;
    c.containers.records_dir = "";
    if (threshold) c.defaults.threshold = *threshold;
    c.resolve();
    return c;
  }
  config::Config cfg, naive_cfg, probe_cfg;  // probe: target 2 compares the probe pass alone with the floor
  ManualClock clock_c, clock_n, clock_p;
  Collector cached, naive, probe_only;
};

// One pass of `col`, timed and its allocations counted, into `res`.
void timed_pass(Collector& col, ModeResult& res) {
  const double t0 = thread_cpu_seconds();
  size_t allocs = 0;
  PassReport r;
  {
    memcg::testing::AllocationCounter counter;
    r = col.run_pass();
    allocs = counter.count();
  }
  res.cpu += thread_cpu_seconds() - t0;
  res.allocs += static_cast<double>(allocs);
  res.reads += static_cast<double>(r.reads);
  res.max_reads = std::max(res.max_reads, static_cast<double>(r.reads));
}

// One scrape of the cached snapshot: the direct writer /metrics uses, and
// for comparison the same families through prometheus-cpp's objects.
void measure_render(const Snapshot& snap, TimePoint now, Row& row) {
  exporter::DaemonStatus status;
  exporter::ProcessStats proc;
  const exporter::ScrapeContext ctx{snap, now, status, proc, "bench", "bench"};
  double s0 = thread_cpu_seconds();
  std::string body;
  exporter::render_text(ctx, body);
  row.scrape_cpu = thread_cpu_seconds() - s0;
  row.scrape_bytes = static_cast<double>(body.size());
  s0 = thread_cpu_seconds();
  (void)exporter::oracle::text(ctx);
  row.scrape_cpu_pcpp = thread_cpu_seconds() - s0;
}

// One scenario: `pct` % of the containers cross their threshold every tick.
// The scrape costs per profile are taken from it when `costs` is given.
Row run_scenario(const Options& o, fixtures::Tree* tree, const Layout& layout, double pct, FloorLoop& floor, unsigned& seed,
                 std::vector<ScrapeCost>* costs) {
  const double total = static_cast<double>(layout.all.size() + 1);
  Collectors c(o.dir, 30s);
  Row row{pct, 0, {}, {}, 0, 0, 0, 0, 0};
  for (int t = 0; t < o.ticks; ++t) {
    const auto crossed = tree ? grow(*tree, layout, pct, c.cfg.defaults.threshold, seed, true) : std::set<std::string>{};
    row.ideal += total / 30.0 + static_cast<double>(crossed.size());
    c.clock_c.advance(1s);
    c.clock_n.advance(1s);
    for (int m = 0; m < 2; ++m)  // alternate the order so neither mode warms the other's cache
      timed_pass((t + m) % 2 ? c.naive : c.cached, (t + m) % 2 ? row.naive : row.cached);
    row.floor_cpu += floor.pass();
    c.clock_p.advance(1s);
    const double p0 = thread_cpu_seconds();
    if (c.probe_only.run_pass().reads != 0) std::fprintf(stderr, "memcg-bench: the probe-only collector read memory.stat\n");
    row.probe_only_cpu += thread_cpu_seconds() - p0;
  }
  measure_render(*c.cached.latest(), c.clock_c.peek(), row);
  if (costs)
    for (auto p : {config::Profile::lean, config::Profile::standard, config::Profile::full})
      costs->push_back(measure_scrape(*c.cached.latest(), c.clock_c.peek(), p));
  return row;
}

void print_rows(const std::vector<Row>& rows, int ticks, size_t total) {
  const double T = ticks, N = static_cast<double>(total);
  std::printf("\n| busy | reads/tick cached | naive | ideal | cached/ideal | naive/cached | max reads in a pass (cached) "
              "| pass CPU cached | naive | floor | cached/floor | scrape CPU | via prometheus-cpp objects | scrape bytes |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows)
    std::printf("| %g %% | %.0f | %.0f | %.0f | %.3f | %.1fx | %.0f | %.2f ms | %.2f ms | %.2f ms | %.1fx | %.0f ms | %.0f ms | %.1f MB |\n",
                r.busy_pct, r.cached.reads / T, r.naive.reads / T, r.ideal / T, r.cached.reads / r.ideal,
                r.naive.reads / std::max(1.0, r.cached.reads), r.cached.max_reads, r.cached.cpu / T * 1e3,
                r.naive.cpu / T * 1e3, r.floor_cpu / T * 1e3, r.cached.cpu / r.floor_cpu, r.scrape_cpu * 1e3,
                r.scrape_cpu_pcpp * 1e3, r.scrape_bytes / 1e6);
  std::printf("\n| busy | probe pass alone (no memory.stat reads) | bare memory.current loop | probe/floor |\n|---|---|---|---|\n");
  for (const auto& r : rows)
    std::printf("| %g %% | %.2f ms | %.2f ms | %.1fx |\n", r.busy_pct, r.probe_only_cpu / T * 1e3, r.floor_cpu / T * 1e3,
                r.probe_only_cpu / r.floor_cpu);
  std::printf("\n| busy | heap allocations per pass, cached | per cgroup | naive | per cgroup |\n|---|---|---|---|---|\n");
  for (const auto& r : rows)
    std::printf("| %g %% | %.1f | %.4f | %.1f | %.4f |\n", r.busy_pct, r.cached.allocs / T, r.cached.allocs / T / N,
                r.naive.allocs / T, r.naive.allocs / T / N);
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = parse_options(argc, argv);
  if (!parsed) {
    std::fprintf(stderr, "usage: memcg-bench [--cgroups N] [--ticks T] [--busy 0,1,5,100] [--dir DIR]\n");
    return 64;
  }
  const Options& o = *parsed;
  const auto fds = cgroupfs::raise_fd_limit(1 << 20);
  const uint64_t collectors = o.scrape_only ? 1 : 3, floor_loop = o.scrape_only ? 0 : 1;
  if (fds.soft < static_cast<uint64_t>(o.n) * (kFdsPerCgroup * collectors + floor_loop) + 64) {
    std::fprintf(stderr, "memcg-bench: RLIMIT_NOFILE %llu is too low for %d cgroups: %llu collector(s) keep %llu fds per cgroup each (raise the hard limit, e.g. as root with CAP_SYS_RESOURCE)\n",
                 static_cast<unsigned long long>(fds.soft), o.n, static_cast<unsigned long long>(collectors),
                 static_cast<unsigned long long>(kFdsPerCgroup));
    return 1;
  }

  std::optional<fixtures::Tree> tree;
  Layout layout;
  if (o.use_root.empty()) {
    std::filesystem::remove_all(o.dir);
    tree.emplace(o.dir);
    layout = fixtures::add_kubernetes_node(*tree, o.n);
  } else {
    for (auto it = std::filesystem::recursive_directory_iterator(o.dir); it != std::filesystem::recursive_directory_iterator(); ++it)
      if (it->is_directory()) layout.all.push_back(std::filesystem::relative(it->path(), o.dir).string());
  }
  const size_t total = layout.all.size() + 1;  // + the root
  std::printf("memcg-bench: %zu cgroups (%zu containers) in %s%s, %d ticks of 1 s per scenario, max_age 30 s\n",
              total, layout.containers.size(), o.dir.c_str(), o.use_root.empty() ? "" : " (existing tree, read only)", o.ticks);

  if (o.scrape_only) {
    scrape_only(o, *tree, layout);
    std::filesystem::remove_all(o.dir);
    return 0;
  }
  std::vector<Row> rows;
  std::vector<ScrapeCost> scrape_costs;  // per profile, measured in the first scenario with changing cgroups
  const double table_pct = *std::find_if(o.busy.begin(), o.busy.end() - 1, [](double b) { return b > 0; });
  {
    FloorLoop floor(o.dir, layout);
    unsigned seed = 12345;
    for (double pct : o.busy)
      rows.push_back(run_scenario(o, tree ? &*tree : nullptr, layout, pct, floor, seed,
                                  scrape_costs.empty() && pct == table_pct ? &scrape_costs : nullptr));
  }
  print_rows(rows, o.ticks, total);
  std::printf("\nOne scrape as Prometheus sends it (Accept-Encoding: gzip), %g %% busy, per profile:\n\n", table_pct);
  print_scrape_costs(scrape_costs);
  std::printf("\nRSS at the end (the three collectors, the tree's specs and the last scrape): %.0f MiB\n", rss_mib());
  if (o.use_root.empty()) std::filesystem::remove_all(o.dir);
  return 0;
}
