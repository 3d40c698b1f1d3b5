// Micro-benchmarks (Google Benchmark). Run: build/tests/memcg-microbench
// Labelled "bench" in ctest, so a plain ctest skips them.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "exporter/exposition/metrics.h"
#include "exporter/http/scrape_cache.h"
#include "plugin/cache/flush_policy.h"
#include "plugin/cache/pending.h"
#include "plugin/cgroup_reader.h"
#include "plugin/cgroup_table.h"
#include "plugin/collector.h"
#include "base/parse/flat_keyed.h"
#include "base/parse/stat_keys.h"
#include "base/sys/unique_fd.h"
#include "tests/fixtures/kubernetes.h"
#include "tests/fixtures/fake_poller.h"
#include "tests/fixtures/faulty_io.h"
#include "tests/fixtures/tree.h"

namespace memcg {
namespace {

using namespace std::chrono_literals;

void BM_ParseMemoryStat(benchmark::State& state) {
  const std::string body = fixtures::kernel_file("work_hog", "memory.stat");
  parse::StatValues v;
  parse::LayoutCache layout;
  for (auto _ : state) {
    auto r = parse::parse_flat_keyed(body, parse::stat_key_table(), layout, v.out());
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_ParseMemoryStat);

void BM_DecideFlush(benchmark::State& state) {
  cache::FlushInput in;
  const TimePoint t0 = TimePoint{} + 1h;
  in.last_read = t0;
  in.threshold = 1 << 20;
  in.max_age = 30s;
  in.lookahead = 1500ms;
  uint64_t p = 0;
  for (auto _ : state) {
    in.pending = (p += 4096) & ((1 << 21) - 1);
    benchmark::DoNotOptimize(cache::decide_flush(in, t0 + 5s));
  }
}
BENCHMARK(BM_DecideFlush);

void BM_SubtreeChange(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<int> parent(n);
  std::vector<cache::ProbeDelta> delta(n);
  for (size_t i = 0; i < n; ++i) {
    parent[i] = i == 0 ? -1 : static_cast<int>((i - 1) / 4);  // a 4-ary tree
    delta[i] = {true, static_cast<int64_t>(i % 7) * 4096, 0};
  }
  std::vector<uint64_t> change(n);
  std::vector<int64_t> a(n), b(n);
  for (auto _ : state) {
    cache::subtree_change(parent, delta, change, a, b);
    benchmark::DoNotOptimize(change.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_SubtreeChange)->Arg(10000);

// A fixture tree of N cgroups, shared by the pass and render benchmarks.
struct Bench {
  explicit Bench(int n) {
    fixtures::CgroupSpec spec;
    spec.current = 64 << 20;
    spec.stat.set("anon", 48 << 20).set("file", 16 << 20).set("pgfault", 1000);
    for (int i = 0; i < n / 10; ++i) {
      const std::string pod = "pod" + std::to_string(i) + ".slice";
      tree.add(pod, spec);
      for (int j = 0; j < 9; ++j) tree.add(pod + "/container" + std::to_string(j) + ".scope", spec);
    }
    cfg = config::Config::builtin(config::HostFacts::probe());
    cfg.defaults.max_age = 1h;
    cfg.containers.records_dir = "";
    cfg.resolve();
  }
  fixtures::Tree tree;
  config::Config cfg;
};

// A pass, then one a second for as long as the benchmark runs; items are
// cgroup probes. Returns the number of probes, for per-probe counters.
double still_passes(benchmark::State& state, Collector& c, ManualClock& clock) {
  c.run_pass();
  for (auto _ : state) {
    clock.advance(1s);
    benchmark::DoNotOptimize(c.run_pass());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * state.range(0)));
  return static_cast<double>(state.iterations()) * static_cast<double>(state.range(0));
}

void BM_QuietPass(benchmark::State& state) {
  Bench b(static_cast<int>(state.range(0)));
  ManualClock clock;
  Collector c(b.tree.root(), b.cfg, clock);
  still_passes(state, c, clock);
}
BENCHMARK(BM_QuietPass)->Arg(1000)->Unit(benchmark::kMillisecond);

// The bare loop of memcg-cost over the same tree: one pread of every
// memory.current through kept-open fds, nothing else. Beside
// BM_QuietPassPolled it gives what the collector adds to a pass of still
// cgroups in user space, in one run, where the reads cost the same (under
// the guests' emulation too: tests/vm/run-bench.sh MICRO=1).
void BM_BareLoop(benchmark::State& state) {
  Bench b(static_cast<int>(state.range(0)));
  std::vector<sys::UniqueFd> fds;
  for (const auto& f : std::filesystem::recursive_directory_iterator(b.tree.root())) {
    if (f.path().filename() != "memory.current") continue;
    fds.emplace_back(::open(f.path().c_str(), O_RDONLY | O_CLOEXEC));
    // A failed open would time preads that fail at once (EBADF).
    if (!fds.back().valid()) return state.SkipWithError("cannot open a fixture's memory.current (RLIMIT_NOFILE?)");
  }
  char buf[64];
  for (auto _ : state)
    for (const auto& fd : fds) benchmark::DoNotOptimize(::pread(fd.get(), buf, sizeof buf, 0));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(fds.size()));
}
BENCHMARK(BM_BareLoop)->Arg(1000)->Unit(benchmark::kMillisecond);

// The same with memory.events polled, as on a real kernel (a fixture's
// regular files cannot be, so BM_QuietPass reads them every pass and never
// takes the quiet probe): a pass of still cgroups is then mostly the read of
// each memory.current and the quiet probe's bookkeeping.
void BM_QuietPassPolled(benchmark::State& state) {
  Bench b(static_cast<int>(state.range(0)));
  ManualClock clock;
  Collector c(b.tree.root(), b.cfg, clock);
  c.set_event_poller(std::make_unique<fixtures::FakePoller>());
  const double probes = still_passes(state, c, clock);
  state.counters["quiet"] = static_cast<double>(c.latest()->quiet_probes) / probes;
}
BENCHMARK(BM_QuietPassPolled)->Arg(1000)->Unit(benchmark::kMillisecond);

// The same on a host with swap, where each probe reads memory.swap.current
// too: with the quiet lane (arg 1), which compares both files' bytes, and
// without it (arg 0: what a host with swap did before the lane took swap).
void BM_QuietPassPolledSwap(benchmark::State& state) {
  Bench b(static_cast<int>(state.range(0)));
  fixtures::FaultyIo io;  // no faults; the host has swap
  io.swap_ = true;
  ManualClock clock;
  Collector c(b.tree.root(), b.cfg, clock, io);
  c.set_event_poller(std::make_unique<fixtures::FakePoller>());
  c.set_quiet_lane(state.range(1) != 0);
  const double probes = still_passes(state, c, clock);
  state.counters["lane"] = static_cast<double>(c.latest()->lane_probes) / probes;
}
BENCHMARK(BM_QuietPassPolledSwap)->Args({1000, 0})->Args({1000, 1})->Unit(benchmark::kMillisecond);

// The steady state of the systemd guest's measurement (docs/performance.md):
// the built-in defaults (max_age 10 s), memory.events polled, eight busy
// leaves whose usage moves every pass, a pass a second. Every cgroup is
// re-read by max_age about every 10 s, so a pass holds ~100 memory.stat
// reads; `reads` and `lane` count them and the lane's probes per pass.
void BM_DefaultPassPolled(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Bench b(n);
  b.cfg = config::Config::builtin(config::HostFacts::probe());
  b.cfg.containers.records_dir = "";
  b.cfg.resolve();
  ManualClock clock;
  Collector c(b.tree.root(), b.cfg, clock);
  c.set_event_poller(std::make_unique<fixtures::FakePoller>());
  std::vector<std::string> busy;
  for (int i = 0; i < 8; ++i) busy.push_back("pod" + std::to_string(i * (n / 80)) + ".slice/container3.scope");
  uint64_t tick = 0;
  const auto step = [&] {
    ++tick;
    for (const auto& path : busy) b.tree.set_current(path, (64u << 20) + (tick % 64) * (1u << 20));
    clock.advance(1s);
    return c.run_pass();
  };
  for (int i = 0; i < 30; ++i) step();  // past the first max_age window
  const uint64_t reads0 = c.latest()->reads[static_cast<size_t>(cache::ReadReason::max_age)];
  const uint64_t lane0 = c.latest()->lane_probes;
  for (auto _ : state) benchmark::DoNotOptimize(step());
  const double passes = static_cast<double>(state.iterations());
  state.counters["reads"] =
      static_cast<double>(c.latest()->reads[static_cast<size_t>(cache::ReadReason::max_age)] - reads0) / passes;
  state.counters["lane"] = static_cast<double>(c.latest()->lane_probes - lane0) / passes;
}
BENCHMARK(BM_DefaultPassPolled)->Arg(1000)->Unit(benchmark::kMillisecond);

// The scrape over a Kubernetes-shaped tree (real path lengths): the text
// render alone, and render + gzip as a Prometheus scrape asks for it.
struct KubeScrape {
  explicit KubeScrape(int n) {
    node = fixtures::add_kubernetes_node(tree, n);
    auto cfg = config::Config::builtin(config::HostFacts::probe());
    cfg.containers.records_dir = "";
    cfg.resolve();
    collector = std::make_unique<Collector>(tree.root(), cfg, clock);
    collector->run_pass();
    clock.advance(1s);
    collector->run_pass();
  }
  exporter::ScrapeContext context() const { return {*collector->latest(), clock.peek(), status, proc, "v", "r"}; }
  fixtures::Tree tree;
  fixtures::KubernetesNode node;
  ManualClock clock;
  std::unique_ptr<Collector> collector;
  exporter::DaemonStatus status;
  exporter::ProcessStats proc;
};

// A rescan of an unchanged Kubernetes-shaped tree (real path depths and
// lengths): the walk's stat per directory and the table's reconciliation.
void BM_QuietRescan(benchmark::State& state) {
  fixtures::Tree tree;
  fixtures::add_kubernetes_node(tree, static_cast<int>(state.range(0)));
  auto cfg = config::Config::builtin(config::HostFacts::probe());
  cfg.containers.records_dir = "";
  cfg.resolve();
  if (state.range(1)) {
    // The root's cgroup.stat as the kernel keeps it: every directory below
    // the root is a live descendant. Rescans then walk one time in six.
    uint64_t dirs = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(tree.root())) dirs += e.is_directory() ? 1u : 0u;
    tree.write("/", "cgroup.stat", "nr_descendants " + std::to_string(dirs) + "\nnr_dying_descendants 0\n");
  }
  CgroupTable table;
  PassReport report;
  Counters counters;
  table.rescan(tree.root(), cfg, report, counters);
  for (auto _ : state) {
    PassReport r;
    table.rescan(tree.root(), cfg, r, counters);
    benchmark::DoNotOptimize(r.added);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * state.range(0)));
  state.counters["walked"] = static_cast<double>(counters.rescans_walked) / static_cast<double>(counters.rescans_walked + counters.rescans_counted);
}
// Second argument: 0 walks at every rescan (no cgroup.stat: an old kernel, a
// fixture), 1 with the root's cgroup.stat (what every cgroup2 kernel has).
BENCHMARK(BM_QuietRescan)->Args({1000, 0})->Args({1000, 1})->Unit(benchmark::kMicrosecond);

// A re-read as the collector makes it (memory.stat timed, parsed, rates
// against the previous record; limits kept from the previous record) against
// a bare pread + parse of the same memory.stat: on regular files the
// kernel's part is small, so what is left is the daemon's own bookkeeping
// per read. Argument: 0 the bare pread + parse; 1 a quiet cgroup's max_age
// read (memory.stat alone); 2 a cgroup whose usage moved (with memory.peak;
// its probe read memory.pressure); 3 with memory.peak and memory.pressure
// (every limits_max_age, or an event, forced or initial read).
void BM_StatReRead(benchmark::State& state) {
  fixtures::Tree tree;
  fixtures::add_kubernetes_node(tree, 100);
  auto cfg = config::Config::builtin(config::HostFacts::probe());
  cfg.containers.records_dir = "";
  cfg.resolve();
  CgroupTable table;
  PassReport report;
  Counters counters;
  table.rescan(tree.root(), cfg, report, counters);
  auto& entries = table.entries();
  std::string text(64 * 1024, '\0');
  parse::LayoutCache layout;
  parse::StatValues values;
  CgroupReader reader(tree.root(), Clock::system(), cgroupfs::FileIo::system(), counters);
  const CgroupReader::PassTime at{Clock::system().now(), Clock::system().wall()};
  for (auto& e : entries) e.record = reader.read_stat(e, cache::CompanionReads{}, at, report).record;
  cache::CompanionReads take;
  take.limits = false;
  take.peak = state.range(0) >= 2;
  take.pressure = state.range(0) >= 3;
  // The collector fetches a pass's reads in batches of kStatBatch; so does
  // this loop (one item per cgroup, a batch every kStatBatch items).
  std::array<const CgroupEntry*, CgroupReader::kStatBatch> batch{};
  std::array<CgroupReader::Fetched, CgroupReader::kStatBatch> fetched{};
  size_t i = 0;
  for (auto _ : state) {
    CgroupEntry& e = entries[i++ % entries.size()];
    if (state.range(0)) {
      const size_t j = (i - 1) % CgroupReader::kStatBatch;
      if (j == 0) {
        for (size_t b = 0; b < batch.size(); ++b) batch[b] = &entries[(i - 1 + b) % entries.size()];
        reader.fetch_stats(batch, fetched, report);
      }
      auto r = reader.finish_stat(e, fetched[j], take, at, report);
      e.record = std::move(r.record);
    } else {
      const ssize_t got = ::pread(e.file(FileKind::stat).get(), text.data(), text.size(), 0);
      benchmark::DoNotOptimize(parse::parse_flat_keyed({text.data(), static_cast<size_t>(got)}, parse::stat_key_table(), layout, values.out()));
    }
  }
}
BENCHMARK(BM_StatReRead)->DenseRange(0, 3);

void BM_RenderMetrics(benchmark::State& state) {
  KubeScrape k(static_cast<int>(state.range(0)));
  const auto ctx = k.context();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    out.reserve(bytes);
    exporter::render_text(ctx, out);
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_RenderMetrics)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_GzipScrape(benchmark::State& state) {
  KubeScrape k(static_cast<int>(state.range(0)));
  const auto ctx = k.context();
  uint64_t pass = 0;
  exporter::ScrapeCache cache;
  const exporter::ScrapeCache::Render render{[&](std::string& out) { exporter::render_identity(ctx, out); },
                                             [&](text::Buffer& out, std::vector<size_t>& starts) { exporter::render_values(ctx, out, &starts); }};
  for (auto _ : state) {
    auto body = cache.get(*k.collector->latest(), {++pass, nullptr}, true, render);
    benchmark::DoNotOptimize(body.bytes->data());
  }
}
BENCHMARK(BM_GzipScrape)->Arg(1000)->Unit(benchmark::kMillisecond);

// Scrapes 15 s apart of a node where 1 % of the containers are busy: their
// usage and memory.stat move between scrapes, every cgroup's memory.stat is
// re-read by max_age (its last-read timestamp moves), the rest reads as
// before. Four such snapshots in turn, each scraped once (what a scrape
// costs where most cgroups are idle: docs/performance.md, "Scrape cost").
void BM_GzipScrapeBusyOnePercent(benchmark::State& state) {
  KubeScrape k(static_cast<int>(state.range(0)));
  const auto& containers = k.node.containers;
  std::vector<std::shared_ptr<const Snapshot>> snaps;
  const size_t busy = std::max<size_t>(1, containers.size() / 100);
  for (int round = 0; round < 4; ++round) {
    for (size_t b = 0; b < busy; ++b) {
      const auto& path = containers[(b * 97 + static_cast<size_t>(round)) % containers.size()];
      const uint64_t bytes = (64u << 20) + static_cast<uint64_t>(round) * (8u << 20);
      k.tree.set_current(path, bytes);
      k.tree.set_stat(path, fixtures::StatBody().set("anon", bytes - (4u << 20)).set("file", 4u << 20));
    }
    for (int pass = 0; pass < 15; ++pass) {
      k.clock.advance(1s);
      k.collector->run_pass();
    }
    snaps.push_back(k.collector->latest());
  }
  exporter::ScrapeCache cache;
  uint64_t scrape = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    const Snapshot& snap = *snaps[scrape % snaps.size()];
    const exporter::ScrapeContext ctx{snap, snap.taken_at, k.status, k.proc, "v", "r"};
    const exporter::ScrapeCache::Render render{[&](std::string& out) { exporter::render_identity(ctx, out); },
                                               [&](text::Buffer& out, std::vector<size_t>& starts) { exporter::render_values(ctx, out, &starts); }};
    auto body = cache.get(snap, {++scrape, nullptr}, true, render);
    benchmark::DoNotOptimize(body.bytes->data());
    bytes = body.bytes->size();
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  const double n = static_cast<double>(state.iterations());
  state.counters["reused"] = static_cast<double>(cache.counts().families_reused) / n;
  state.counters["built"] = static_cast<double>(cache.counts().families_compressed) / n;
  state.counters["runs"] = static_cast<double>(cache.counts().runs_reused) / n;
  state.counters["text_reused"] = static_cast<double>(cache.counts().bytes_reused) / n;
}
BENCHMARK(BM_GzipScrapeBusyOnePercent)->Arg(1000)->Unit(benchmark::kMillisecond);


}  // namespace
}  // namespace memcg

BENCHMARK_MAIN();
