// The cache contract, in the style of oomd's data-lifecycle tests: values stay
// as read until the policy decides to re-read, and every reason is observable.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "base/sys/unique_fd.h"
#include "config/config.h"
#include "plugin/collector.h"
#include "tests/fixtures/faulty_io.h"
#include "tests/fixtures/fd_limit.h"
#include "tests/fixtures/tree.h"
#include "tests/unit/alloc_counter.h"

namespace memcg {
namespace {

using namespace std::chrono_literals;
using cache::ReadReason;

constexpr uint64_t kThreshold = 4096;

using fixtures::FaultyIo;

class CollectorTest : public ::testing::Test {
 protected:
  CollectorTest() {
    tree.add("a", spec(10 << 20));
    tree.add("a/x", spec(6 << 20));
    tree.add("a/y", spec(4 << 20));
    tree.add("b", spec(1 << 20));
    cfg = config::Config::builtin({4096, 1});
    cfg.defaults.threshold = kThreshold;
    cfg.defaults.max_age = 10s;
    cfg.defaults.stats.all = true;
    cfg.collector.rescan_interval = 1h;  // tests rescan explicitly
    cfg.resolve();
  }

  static fixtures::CgroupSpec spec(uint64_t current) {
    fixtures::CgroupSpec s;
    s.current = current;
    s.stat.set("anon", current / 2).set("file", current / 2).set("pgfault", 100);
    return s;
  }

  std::unique_ptr<Collector> make() { return std::make_unique<Collector>(tree.root(), cfg, clock, io); }

  // Runs a pass one probe interval after the previous one.
  PassReport pass(Collector& c) {
    clock.advance(1s);
    return c.run_pass();
  }

  const CgroupView& view(const Collector& c, const std::string& path) {
    snap = c.latest();
    for (const auto& v : snap->cgroups)
      if (v.id->path == path) return v;
    throw std::runtime_error("no cgroup " + path);
  }
  bool has(const Collector& c, const std::string& path) {
    for (const auto& v : c.latest()->cgroups)
      if (v.id->path == path) return true;
    return false;
  }
  uint64_t reads(const Collector& c, const std::string& path, ReadReason r) {
    return view(c, path).reads[static_cast<size_t>(r)];
  }
  uint64_t stat(const Collector& c, const std::string& path, const char* key) {
    return *view(c, path).stat->values->get(*parse::stat_key_table().find(key));
  }
  // Moves a leaf's memory.current and its ancestors' by the same amount, as the kernel would.
  void grow(const std::string& leaf, int64_t delta) {
    for (std::string p = leaf;;) {
      auto& s = tree.spec(p);
      tree.set_current(p, static_cast<uint64_t>(static_cast<int64_t>(s.current) + delta));
      auto slash = p.rfind('/');
      if (slash == std::string::npos) break;
      p = p.substr(0, slash);
    }
  }

  fixtures::Tree tree;
  config::Config cfg;
  ManualClock clock;
  FaultyIo io;
  std::shared_ptr<const Snapshot> snap;
};

TEST_F(CollectorTest, FirstPassReadsEverythingThenQuietPassesSkip) {
  auto c = make();
  auto r1 = pass(*c);
  EXPECT_EQ(r1.added, 5u);  // root, a, a/x, a/y, b
  EXPECT_EQ(r1.reads, 5u);
  for (const char* p : {"/", "a", "a/x", "a/y", "b"}) EXPECT_EQ(reads(*c, p, ReadReason::initial), 1u) << p;
  auto first = view(*c, "a/x").stat;

  auto r2 = pass(*c);
  EXPECT_EQ(r2.reads, 0u);
  EXPECT_EQ(r2.skips, 5u);
  EXPECT_EQ(view(*c, "a/x").skips, 1u);
  EXPECT_EQ(view(*c, "a/x").stat, first) << "a skip serves the cached record";
  EXPECT_EQ(c->latest()->skips, 5u);
}

TEST_F(CollectorTest, ValuesStayAsReadUntilThePolicyRereads) {
  auto c = make();
  pass(*c);
  auto body = tree.spec("b").stat;
  tree.set_stat("b", body.set("anon", 12345));  // memory.stat moved, memory.current did not
  int age = 0;
  while (reads(*c, "b", ReadReason::max_age) == 0 && age < 20) {
    EXPECT_EQ(stat(*c, "b", "anon"), (1u << 20) / 2) << "age " << age << " s: still the cached value";
    pass(*c);
    ++age;
  }
  EXPECT_EQ(stat(*c, "b", "anon"), 12345u) << "re-read by max_age";
  // Refreshes are phased per cgroup, but never later than max_age allows:
  // by the pass after, at age + 1 s, it would have been 10 s = max_age.
  EXPECT_LE(age, 9);
  EXPECT_EQ(view(*c, "b").skips, static_cast<uint64_t>(age - 1));
}

// A max_age read whose memory.stat is the last read's, byte for byte, keeps
// the last values without a parse (memcg_exporter_stat_reads_unchanged_total);
// a changed byte, even one that keeps the length, is parsed; the malformed
// lines of an unchanged file are counted at every read, as a parse would.
TEST_F(CollectorTest, AReReadOfTheSameBytesKeepsItsValuesAndAChangedByteIsParsed) {
  auto c = make();
  pass(*c);
  EXPECT_EQ(c->latest()->reads_unchanged, 0u) << "a first read has nothing to compare with";
  // Until every cgroup's max_age read came and went, nothing changed.
  for (int i = 0; i < 10; ++i) pass(*c);
  const uint64_t max_age_reads = c->latest()->reads[static_cast<size_t>(ReadReason::max_age)];
  ASSERT_GE(max_age_reads, 5u);
  EXPECT_EQ(c->latest()->reads_unchanged, max_age_reads);
  EXPECT_EQ(stat(*c, "b", "anon"), (1u << 20) / 2);
  EXPECT_EQ(stat(*c, "b", "pgfault"), 100u);

  // pgfault 100 -> 109: the same length, another value.
  auto body = tree.spec("b").stat;
  tree.set_stat("b", body.set("pgfault", 109));
  const uint64_t b_reads = reads(*c, "b", ReadReason::max_age);
  while (reads(*c, "b", ReadReason::max_age) == b_reads) pass(*c);
  EXPECT_EQ(stat(*c, "b", "pgfault"), 109u) << "one changed digit is a changed file";
  const CgroupView& b = view(*c, "b");
  ASSERT_TRUE(b.stat);
  ASSERT_TRUE(b.stat->prev_values);
  EXPECT_EQ(b.stat->prev_values->values[*parse::stat_key_table().find("pgfault")], 100u);

  // A line the parser cannot read, kept in the file: counted at each read.
  {
    std::ofstream f(tree.root() + "/b/memory.stat", std::ios::app);
    f << "anon_thp notanumber\n";
  }
  const auto stat_errors = [&] { return c->latest()->parse_errors[static_cast<size_t>(FileKind::stat)]; };
  const uint64_t errors0 = stat_errors();
  for (int read = 1; read <= 2; ++read) {
    const uint64_t before = reads(*c, "b", ReadReason::max_age);
    const uint64_t unchanged = c->latest()->reads_unchanged;
    while (reads(*c, "b", ReadReason::max_age) == before) pass(*c);
    EXPECT_EQ(stat_errors(), errors0 + static_cast<uint64_t>(read)) << "read " << read;
    EXPECT_EQ(stat(*c, "b", "pgfault"), 109u);
    // The first read of the new bytes parses them; the second keeps them
    // (other cgroups' reads may count too).
    if (read == 2) {
      EXPECT_GT(c->latest()->reads_unchanged, unchanged);
    }
  }
}

TEST_F(CollectorTest, MaxAgeRefreshesAreSpreadOverTime) {
  fixtures::Tree t;
  for (int i = 0; i < 60; ++i) t.add("c" + std::to_string(i), spec(1 << 20));
  cfg.defaults.max_age = 30s;
  cfg.resolve();
  Collector c(t.root(), cfg, clock, io);
  c.run_pass();  // 61 initial reads in one pass
  uint64_t most = 0, total = 0;
  for (int i = 0; i < 30; ++i) {
    clock.advance(1s);
    const uint64_t r = c.run_pass().reads;
    most = std::max(most, r);
    total += r;
  }
  EXPECT_EQ(total, 61u) << "each cgroup refreshed once in its first max_age";
  // Phases are hashed from inode numbers, so the 61 reads land in the ~14
  // passes of the window's second half like random throws: ~4 per pass, and
  // a pass with 16 or more has a probability below 1e-4 (10 would be ~1 %).
  EXPECT_LE(most, 15u) << "spread over the second half of the window, never the burst of 61";
}

TEST_F(CollectorTest, ReadBudgetPrefersOverdueThenUrgentAndCountsViolations) {
  cfg.collector.max_stat_reads_per_second = 2;  // 2 reads per 1 s pass
  cfg.resolve();
  auto c = make();
  EXPECT_EQ(pass(*c).reads, 2u) << "even initial reads respect the budget";
  for (int i = 0; i < 2; ++i) pass(*c);
  for (const char* p : {"/", "a", "a/x", "a/y", "b"}) EXPECT_EQ(reads(*c, p, ReadReason::initial), 1u) << p;
  // Now a/y changes a lot and b a little: both want threshold reads, and so
  // do their ancestors; a/y (and its parents, same change) go first.
  grow("a/y", 1 << 20);
  grow("b", 8192);
  auto r = pass(*c);
  EXPECT_EQ(r.reads, 2u);
  EXPECT_EQ(reads(*c, "b", ReadReason::threshold), 0u) << "least urgent: deferred";
  EXPECT_GT(c->latest()->reads_deferred, 0u);
  // With the budget far too small for max_age, overdue reads are counted.
  cfg.collector.max_stat_reads_per_second = 0.1;
  c->set_config(cfg);
  uint64_t violations = 0;
  for (int i = 0; i < 30; ++i) violations += pass(*c).max_age_violations;
  EXPECT_GT(violations, 0u);
  uint64_t per_cgroup = 0;
  for (const auto& v : c->latest()->cgroups) per_cgroup += v.max_age_violations;
  EXPECT_EQ(per_cgroup, violations);
}

TEST_F(CollectorTest, ThresholdCountsChangeSinceLastReadAndPropagatesUp) {
  auto c = make();
  pass(*c);
  grow("a/x", 3000);
  pass(*c);
  EXPECT_EQ(view(*c, "a/x").pending, 3000u);
  EXPECT_EQ(view(*c, "a").pending, 3000u);
  EXPECT_EQ(view(*c, "/").pending, 3000u) << "the root has no memory.current but inherits its subtree";
  EXPECT_EQ(view(*c, "b").pending, 0u);

  grow("a/x", -1500);  // back down: change is absolute, pending now 4500
  auto r = pass(*c);
  EXPECT_EQ(r.reads, 3u);
  for (const char* p : {"/", "a", "a/x"}) {
    EXPECT_EQ(reads(*c, p, ReadReason::threshold), 1u) << p;
    EXPECT_EQ(view(*c, p).pending, 0u) << p << ": a read resets pending";
  }
  EXPECT_EQ(reads(*c, "a/y", ReadReason::threshold), 0u);
  EXPECT_EQ(view(*c, "a/y").skips, 2u);
}

TEST_F(CollectorTest, SiblingsMovingOppositeWaysFlushTheirParent) {
  auto c = make();
  pass(*c);
  tree.set_current("a/x", (6 << 20) + 3000);
  tree.set_current("a/y", (4 << 20) - 3000);  // a's memory.current is unchanged
  pass(*c);
  EXPECT_EQ(view(*c, "a").pending, 0u);
  EXPECT_EQ(reads(*c, "a", ReadReason::threshold), 1u);
  EXPECT_EQ(reads(*c, "a/x", ReadReason::threshold), 0u) << "3000 < threshold";
}

TEST_F(CollectorTest, SwapChangeCounts) {
  auto c = make();
  pass(*c);
  tree.set_swap("b", 8192);
  pass(*c);
  EXPECT_EQ(reads(*c, "b", ReadReason::threshold), 1u);
}

TEST_F(CollectorTest, SwaplessHostStopsReadingSwapOnceItIsZero) {
  tree.set_swap("a/x", 3 << 20);  // swapped out before swapoff
  io.swap_ = false;
  auto c = make();
  pass(*c);
  EXPECT_EQ(view(*c, "a/x").probe.swap, uint64_t{3 << 20});
  EXPECT_EQ(view(*c, "b").probe.swap, uint64_t{0});
  // swapoff brings a/x's pages back: read until it reaches 0.
  tree.set_swap("a/x", 0);
  pass(*c);
  EXPECT_EQ(view(*c, "a/x").probe.swap, uint64_t{0});
  // Without swap space neither can grow again; a file that says otherwise is
  // not read any more (the kernel cannot produce it).
  tree.set_swap("a/x", 4096);
  tree.set_swap("b", 4096);
  pass(*c);
  EXPECT_EQ(view(*c, "a/x").probe.swap, uint64_t{0});
  EXPECT_EQ(view(*c, "b").probe.swap, uint64_t{0});
  // swapon: read again at the next pass.
  io.swap_ = true;
  pass(*c);
  EXPECT_EQ(view(*c, "a/x").probe.swap, uint64_t{4096});
  EXPECT_EQ(view(*c, "b").probe.swap, uint64_t{4096});
}

TEST_F(CollectorTest, MemoryEventsTriggerARead) {
  auto c = make();
  pass(*c);
  tree.set_event("a/y", "oom_kill", 1);
  pass(*c);
  EXPECT_EQ(reads(*c, "a/y", ReadReason::event), 1u);
  EXPECT_EQ(view(*c, "a/y").probe.events->events.get(parse::ev_oom_kill), std::optional<uint64_t>(1));
  tree.set_event("a/y", "low", 3);  // reclaim under protection: not notable on its own
  pass(*c);
  EXPECT_EQ(reads(*c, "a/y", ReadReason::event), 1u);
}

TEST_F(CollectorTest, LimitsAreReadAtMostEveryLimitsMaxAgeAndAfterALimitEvent) {
  cfg.collector.limits_max_age = 60s;
  auto c = make();
  pass(*c);
  auto max_of = [&] { return view(*c, "b").stat->limits[lim_max]; };
  ASSERT_TRUE(max_of() && max_of()->unlimited);
  tree.write("b", "memory.max", "104857600\n");
  tree.write("b", "memory.peak", "3145728\n");
  grow("b", 1 << 20);  // a threshold read: memory.stat and memory.peak, not the limits yet
  pass(*c);
  EXPECT_EQ(reads(*c, "b", ReadReason::threshold), 1u);
  EXPECT_TRUE(max_of()->unlimited) << "limits read at most every 60 s";
  EXPECT_EQ(*view(*c, "b").stat->peak, 3145728u) << "memory.peak is read with a memory.stat read after usage moved";
  for (int i = 0; i < 75; ++i) pass(*c);  // the first max_age read 60 s after the last limits read brings them
  ASSERT_FALSE(max_of()->unlimited) << "max_age reads: " << reads(*c, "b", ReadReason::max_age);
  EXPECT_EQ(max_of()->value, 104857600u);
  // A limit event reads them at once.
  tree.write("b", "memory.high", "52428800\n");
  tree.set_event("b", "high", 7);
  pass(*c);
  EXPECT_EQ(reads(*c, "b", ReadReason::event), 1u);
  EXPECT_EQ(view(*c, "b").stat->limits[lim_high]->value, 52428800u);
}

TEST_F(CollectorTest, WhereMemoryPeakResetsPerFileTheOneMinuteHighHasTheSpikesBetweenProbes) {
  // 6.12: a write to memory.peak resets the peak seen through that
  // descriptor; each read is then the highest usage since the last. The
  // fixture plays the kernel: the test writes what the file would show.
  std::vector<std::string> resets;
  io.on_pwrite = [&](std::string_view path) { resets.emplace_back(path); return true; };
  tree.write("b", "memory.peak", "104857600\n");  // since b was created: 100 MiB
  auto c = make();
  c->set_kernel(std::make_shared<const cgroupfs::KernelFacts>(cgroupfs::probe_kernel(tree.root(), "6.12.0", {4096, 2}, cgroupfs::RootFs::cgroup2fs)));
  pass(*c);
  EXPECT_EQ(*view(*c, "b").stat->peak, 104857600u);
  ASSERT_EQ(resets.size(), 4u) << "every cgroup's memory.peak reset after its first read";
  EXPECT_TRUE(resets.back().ends_with("/memory.peak"));
  EXPECT_EQ(*view(*c, "b").probe.current_max, 1u << 20) << "the probes' highest: the watermark since creation is not the last minute's";
  // A 40 MiB spike between two probes, gone by the next: memory.current
  // moved by 1 MiB, a threshold read takes memory.peak with it.
  tree.write("b", "memory.peak", "41943040\n");
  grow("b", 1 << 20);
  pass(*c);
  EXPECT_EQ(reads(*c, "b", ReadReason::threshold), 1u);
  EXPECT_EQ(*view(*c, "b").probe.current_max, 41943040u) << "the spike is in the one-minute high";
  EXPECT_EQ(*view(*c, "b").stat->peak, 104857600u) << "memcg_memory_peak_bytes stays the highest since creation";
  EXPECT_EQ(resets.size(), 5u);
  // A minute later the spike has left the window.
  tree.write("b", "memory.peak", "3145728\n");
  for (int i = 0; i < 70; ++i) pass(*c);
  EXPECT_LT(*view(*c, "b").probe.current_max, 41943040u);
  // A spike the probes never saw (memory.current as before): the next
  // read, due by max_age alone, takes memory.peak and finds it.
  tree.write("b", "memory.peak", "52428800\n");
  const uint64_t max_age_reads = reads(*c, "b", ReadReason::max_age);
  for (int i = 0; i < 12 && reads(*c, "b", ReadReason::max_age) == max_age_reads; ++i) pass(*c);
  ASSERT_GT(reads(*c, "b", ReadReason::max_age), max_age_reads);
  EXPECT_EQ(*view(*c, "b").probe.current_max, 52428800u);
  // Nothing above the usage the probe saw since the last reset: a reset
  // would set the peak to that usage, which it is already, so none is written.
  const auto next_read = [&] {
    const uint64_t n = reads(*c, "b", ReadReason::max_age);
    for (int i = 0; i < 12 && reads(*c, "b", ReadReason::max_age) == n; ++i) pass(*c);
    ASSERT_GT(reads(*c, "b", ReadReason::max_age), n);
  };
  const auto b_resets = [&] { return std::count_if(resets.begin(), resets.end(), [](const std::string& p) { return p.ends_with("/b/memory.peak"); }); };
  const auto written = b_resets();
  tree.write("b", "memory.peak", std::to_string(*view(*c, "b").probe.current) + "\n");
  next_read();
  EXPECT_EQ(b_resets(), written) << "a quiet cgroup's read: memory.stat and memory.peak, no write";
  tree.write("b", "memory.peak", "6291456\n");
  next_read();
  EXPECT_EQ(b_resets(), written + 1) << "a rise above the usage: reset, so the next read starts from there";
}

TEST_F(CollectorTest, WhereMemoryPeakCannotBeResetItIsTheWatermarkAndTheHighComesFromProbes) {
  // The kernel has the reset, the daemon may not write (EACCES: the default
  // of the test's FileIo): memory.peak is the watermark since creation,
  // never taken for a between-probes peak.
  tree.write("b", "memory.peak", "104857600\n");
  auto c = make();
  c->set_kernel(std::make_shared<const cgroupfs::KernelFacts>(cgroupfs::probe_kernel(tree.root(), "6.12.0", {4096, 2}, cgroupfs::RootFs::cgroup2fs)));
  pass(*c);
  grow("b", 1 << 20);
  pass(*c);
  EXPECT_EQ(reads(*c, "b", ReadReason::threshold), 1u);
  EXPECT_EQ(*view(*c, "b").probe.current_max, 2u << 20);
  EXPECT_EQ(*view(*c, "b").stat->peak, 104857600u);
  EXPECT_FALSE(view(*c, "b").stat->peak_reset);
}

TEST_F(CollectorTest, PressureIsReadWhenTheCgroupMovesOrWithMemoryStat) {
  auto c = make();
  pass(*c);
  const auto psi = [&] { return view(*c, "b").probe.psi.some.total_us; };
  EXPECT_EQ(psi(), 0u);
  tree.write("b", "memory.pressure", "some avg10=1.00 avg60=0 avg300=0 total=5000\nfull avg10=0 avg60=0 avg300=0 total=100\n");
  pass(*c);
  EXPECT_EQ(psi(), 0u) << "a quiet cgroup's totals are kept";
  grow("b", 1000);  // below the threshold: no memory.stat read, but it moved
  pass(*c);
  EXPECT_EQ(psi(), 5000u);
  EXPECT_EQ(reads(*c, "b", ReadReason::threshold), 0u);
  tree.write("b", "memory.pressure", "some avg10=1.00 avg60=0 avg300=0 total=9000\nfull avg10=0 avg60=0 avg300=0 total=100\n");
  c->request_refresh(*config::Glob::compile("b", nullptr));
  pass(*c);
  EXPECT_EQ(psi(), 9000u) << "refreshed with the memory.stat read, so never older than max_age";
}

TEST_F(CollectorTest, EveryFileReadIsCountedByFile) {
  auto c = make();
  const auto count = [&](FileKind k) { return c->latest()->file_reads[static_cast<size_t>(k)]; };
  pass(*c);
  EXPECT_EQ(count(FileKind::current), 4u) << "a, a/x, a/y, b (the root has no memory.current)";
  EXPECT_EQ(count(FileKind::stat), 5u) << "every cgroup's initial read";
  EXPECT_EQ(count(FileKind::peak), 4u) << "with the initial reads (the root has no memory.peak)";
  const uint64_t current = count(FileKind::current), stat = count(FileKind::stat), pressure = count(FileKind::pressure);
  pass(*c);  // quiet: the probes alone
  EXPECT_EQ(count(FileKind::current), current + 4);
  EXPECT_EQ(count(FileKind::stat), stat);
  EXPECT_EQ(count(FileKind::pressure), pressure + 1) << "the root's, for the PSI gate, and no other";
  c->request_refresh(*config::Glob::compile("b", nullptr));
  pass(*c);
  EXPECT_EQ(count(FileKind::stat), stat + 1) << "b's forced read";
  EXPECT_EQ(count(FileKind::peak), 4u + 1) << "b's forced read takes memory.peak along";
}

// The limits change only by a write, which the cgroup directory's watch
// reports: a quiet cgroup's are not re-read every limits_max_age.
TEST_F(CollectorTest, WatchedLimitsAreReadAgainOnlyAfterAWrite) {
  cfg.collector.limits_max_age = 20s;
  auto c = make();
  const auto count = [&] { return c->latest()->file_reads[static_cast<size_t>(FileKind::max)]; };
  pass(*c);
  EXPECT_EQ(c->latest()->limits_watched, 0u) << "a cgroup gone within limits_max_age never pays for watches";
  for (int i = 0; i < 31; ++i) pass(*c);  // limits_max_age, then a max_age read: the first periodic limits read
  EXPECT_EQ(c->latest()->limits_watched, 5u);
  const uint64_t after_first = count();
  for (int i = 0; i < 65; ++i) pass(*c);  // three limits_max_age, six max_age reads each
  ASSERT_GE(reads(*c, "b", ReadReason::max_age), 8u);
  EXPECT_EQ(count(), after_first) << "nothing written: the limits read are still what the files say";
  tree.write("b", "memory.max", "104857600\n");
  for (int i = 0; i < 12; ++i) pass(*c);  // the next max_age read (limits_max_age is long past)
  EXPECT_EQ(view(*c, "b").stat->limits[lim_max]->value, 104857600u);
  EXPECT_EQ(count(), after_first + 1) << "b's, and only b's";
  tree.write("a/y", "memory.swap.max", "1048576\n");  // a limit the collector keeps no fd for
  for (int i = 0; i < 25; ++i) pass(*c);
  EXPECT_EQ(view(*c, "a/y").stat->limits[lim_swap_max]->value, 1048576u);
}

TEST_F(CollectorTest, UnwatchedLimitsAreReadEveryLimitsMaxAgeAndTheReportSaysWhy) {
  cfg.collector.limits_max_age = 20s;
  io.refuse_watches = ENOSPC;
  auto c = make();
  const auto count = [&] { return c->latest()->file_reads[static_cast<size_t>(FileKind::max)]; };
  pass(*c);
  const uint64_t after_initial = count();
  PassReport r;
  for (int i = 0; i < 65; ++i) r = pass(*c);
  EXPECT_EQ(r.unwatched, 5u);
  EXPECT_EQ(r.watch_error, ENOSPC);
  EXPECT_EQ(c->latest()->limits_watched, 0u);
  EXPECT_GE(count(), after_initial + 4 * 2) << "every cgroup with a memory.max, at least twice";
}

// The PSI gate (cache/psi_gate.h): a stall below the root moves the root's
// "some" total too, so while it stays, a moving cgroup's memory.pressure is
// not read again; its totals are as fresh as a read, and a stall anywhere
// opens the gate again.
TEST_F(CollectorTest, PressureIsNotReadAgainWhileTheRootsTotalStays) {
  auto c = make();
  pass(*c);
  const auto pressure_reads = [&] { return c->latest()->file_reads[static_cast<size_t>(FileKind::pressure)]; };
  const auto psi = [&] { return view(*c, "b").probe.psi; };
  grow("b", 1000);
  pass(*c);  // b's first move: read, under this pass's mark
  const uint64_t before = pressure_reads();
  for (int i = 0; i < 5; ++i) {
    const TimePoint psi_at = view(*c, "b").probe.psi_at;
    grow("b", 1000);  // moves every pass, below the threshold
    pass(*c);
    EXPECT_GT(view(*c, "b").probe.psi_at, psi_at) << "known unchanged as of this pass: as fresh as a read";
  }
  EXPECT_EQ(pressure_reads(), before + 5) << "the root's, once a pass; b's not again";
  EXPECT_EQ(psi().some.total_us, 0u);

  // A stall in b: the kernel counts it at the root as well (the fixture does).
  tree.write("b", "memory.pressure", "some avg10=1.00 avg60=0 avg300=0 total=4000\nfull avg10=0 avg60=0 avg300=0 total=300\n");
  grow("b", 1000);
  pass(*c);
  EXPECT_EQ(psi().some.total_us, 4000u);
  EXPECT_EQ(psi().full.total_us, 300u);
  EXPECT_EQ(pressure_reads(), before + 5 + 2) << "the root's and b's";
}

TEST_F(CollectorTest, WithoutTheRootsPressureAMovingCgroupsIsReadEveryPass) {
  tree.remove_file("/", "memory.pressure");  // a kernel without PSI at the root: no gate
  auto c = make();
  pass(*c);
  const auto pressure_reads = [&] { return c->latest()->file_reads[static_cast<size_t>(FileKind::pressure)]; };
  const uint64_t before = pressure_reads();
  for (int i = 0; i < 3; ++i) {
    grow("b", 1000);
    pass(*c);
  }
  EXPECT_EQ(pressure_reads(), before + 3) << "b's at each of its moves";
  // A root file that is not PSI's format opens no gate either.
  tree.write("/", "memory.pressure", "some total=\n");
  auto d = make();
  pass(*d);
  const uint64_t d_before = d->latest()->file_reads[static_cast<size_t>(FileKind::pressure)];
  grow("b", 1000);
  pass(*d);
  EXPECT_EQ(d->latest()->file_reads[static_cast<size_t>(FileKind::pressure)], d_before + 2) << "the root's and b's";
}

TEST_F(CollectorTest, QuietCgroupsReadMemoryStatAloneUntilTheCompanionsAreLimitsMaxAgeOld) {
  cfg.collector.limits_max_age = 60s;
  auto c = make();
  pass(*c);
  const auto peak = [&] { return *view(*c, "b").stat->peak; };
  const auto psi = [&] { return view(*c, "b").probe.psi.some.total_us; };
  const uint64_t peak0 = peak();
  // Usage never moves: a stall without a change in usage, or a spike that
  // returned to the same byte count between two probes.
  tree.write("b", "memory.peak", "9437184\n");
  tree.write("b", "memory.pressure", "some avg10=1.00 avg60=0 avg300=0 total=7000\nfull avg10=0 avg60=0 avg300=0 total=100\n");
  for (int i = 0; i < 40; ++i) pass(*c);
  ASSERT_GE(reads(*c, "b", ReadReason::max_age), 3u);
  EXPECT_EQ(peak(), peak0) << "max_age reads of a quiet cgroup take memory.stat alone";
  EXPECT_EQ(psi(), 0u);
  for (int i = 0; i < 32; ++i) pass(*c);  // past limits_max_age, then the next max_age read
  EXPECT_EQ(peak(), 9437184u) << "at least every limits_max_age";
  EXPECT_EQ(psi(), 7000u);
  // Usage moved, even below the threshold: the next memory.stat read (here
  // by max_age) takes memory.peak; the probe that saw the move read pressure.
  tree.write("b", "memory.peak", "10485760\n");
  tree.write("b", "memory.pressure", "some avg10=1.00 avg60=0 avg300=0 total=8000\nfull avg10=0 avg60=0 avg300=0 total=100\n");
  grow("b", 1000);
  const uint64_t before = reads(*c, "b", ReadReason::max_age);
  pass(*c);
  EXPECT_EQ(psi(), 8000u);
  while (reads(*c, "b", ReadReason::max_age) == before) pass(*c);
  EXPECT_EQ(peak(), 10485760u);
}

TEST_F(CollectorTest, PendingRefreshRequestsAreCappedUntilThePassServesThem) {
  auto c = make();
  pass(*c);
  for (size_t i = 0; i < Collector::kMaxPendingRefresh; ++i)
    EXPECT_TRUE(c->request_refresh(*config::Glob::compile("x" + std::to_string(i), nullptr))) << i;
  EXPECT_FALSE(c->request_refresh(*config::Glob::compile("one-too-many", nullptr)));
  EXPECT_TRUE(c->request_refresh(*config::Glob::compile("x3", nullptr))) << "the same glob again is merged";
  pass(*c);
  EXPECT_TRUE(c->request_refresh(*config::Glob::compile("one-too-many", nullptr))) << "the pass took them";
}

TEST_F(CollectorTest, ForcedRefreshReadsOnlyMatchingCgroupsOnce) {
  auto c = make();
  pass(*c);
  c->request_refresh(*config::Glob::compile("a/*", nullptr));
  auto r = pass(*c);
  EXPECT_EQ(r.reads, 2u);
  EXPECT_EQ(reads(*c, "a/x", ReadReason::forced), 1u);
  EXPECT_EQ(reads(*c, "a/y", ReadReason::forced), 1u);
  EXPECT_EQ(reads(*c, "a", ReadReason::forced), 0u);
  pass(*c);
  EXPECT_EQ(reads(*c, "a/x", ReadReason::forced), 1u) << "a request is served once";
  EXPECT_EQ(reads(*c, "a/y", ReadReason::forced), 1u);
}

TEST_F(CollectorTest, ZeroThresholdIsTheNaiveMode) {
  cfg.defaults.threshold = 0;
  cfg.resolve();
  auto c = make();
  pass(*c);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pass(*c).reads, 5u);
  EXPECT_EQ(reads(*c, "b", ReadReason::threshold), 3u);
}

TEST_F(CollectorTest, RatesFromConsecutiveReads) {
  const auto k = [](const char* key) { return *parse::stat_key_table().find(key); };
  auto c = make();
  pass(*c);
  EXPECT_FALSE(view(*c, "b").stat->rate(k("pgfault"))) << "one read has no rate";
  EXPECT_FALSE(view(*c, "b").probe.current_rate) << "one probe has no rate";
  auto body = tree.spec("b").stat;
  tree.set_stat("b", body.set("pgfault", 300).set("anon", 0));
  clock.advance(1s);
  grow("b", 8192);  // 8192 B over 2 s of probes
  pass(*c);
  const auto& v = view(*c, "b");
  ASSERT_TRUE(v.stat->rate(k("pgfault")));
  EXPECT_DOUBLE_EQ(*v.stat->rate(k("pgfault")), 100.0);              // (300-100)/2s
  EXPECT_DOUBLE_EQ(*v.stat->rate(k("anon")), -double(1 << 20) / 4);  // (0-512KiB)/2s
  EXPECT_DOUBLE_EQ(*v.probe.current_rate, 4096.0);
}

TEST_F(CollectorTest, RemovedCgroupIsDroppedAtRescan) {
  auto c = make();
  pass(*c);
  tree.remove("b");
  c->set_config(cfg);  // forces a rescan
  auto r = pass(*c);
  EXPECT_EQ(r.removed, 1u);
  EXPECT_FALSE(has(*c, "b"));
  EXPECT_TRUE(r.errors.empty());
}

TEST_F(CollectorTest, CgroupGoneMidReadIsDroppedQuietly) {
  auto c = make();
  pass(*c);
  io.faults_[tree.dir("a/x") + "/"] = ENODEV;  // what kernfs returns after rmdir
  auto r = pass(*c);
  EXPECT_EQ(r.removed, 1u);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_FALSE(has(*c, "a/x"));
  for (auto n : c->latest()->read_errors) EXPECT_EQ(n, 0u);
  io.faults_[tree.dir("b") + "/memory.stat"] = ENOENT;
  grow("b", 1 << 20);
  r = pass(*c);
  EXPECT_FALSE(has(*c, "b"));
  EXPECT_TRUE(r.errors.empty());
}

TEST_F(CollectorTest, APassReadsEveryMemoryCurrentBeforeAnythingElse) {
  // The system calls of the probes back to back, the bookkeeping after
  // (CgroupReader::read_ahead): one read of each cgroup's memory.current
  // per pass, all of them first.
  auto c = make();
  pass(*c);
  std::vector<std::string> order;
  io.on_pread = [&](std::string_view path) { order.emplace_back(path); };
  const auto current_reads = [&] { return c->latest()->file_reads[static_cast<size_t>(FileKind::current)]; };
  const uint64_t before = current_reads();
  grow("a/x", 1 << 20);  // one cgroup moves: its events and pressure are read in its probe
  pass(*c);
  ASSERT_EQ(c->latest()->cgroups.size(), 5u);  // the root (no memory.current of its own), a, a/x, a/y, b
  const auto usage = [](const std::string& p) { return p.ends_with("/memory.current") || p.ends_with("/memory.swap.current"); };
  size_t first_other = 0;
  while (first_other < order.size() && usage(order[first_other])) ++first_other;
  ASSERT_LT(first_other, order.size()) << "a/x's events and pressure come after";
  std::set<std::string> seen;
  for (size_t i = 0; i < first_other; ++i) {
    if (!order[i].ends_with("/memory.current")) continue;
    EXPECT_TRUE(seen.insert(order[i]).second) << "twice: " << order[i];
  }
  EXPECT_EQ(seen.size(), 4u) << "every cgroup's memory.current, once";
  for (size_t i = first_other; i < order.size(); ++i) EXPECT_FALSE(usage(order[i])) << "read again: " << order[i];
  EXPECT_EQ(current_reads(), before + 4);
  EXPECT_EQ(view(*c, "a/x").probe.current, (6u << 20) + (1u << 20));

  // A read that fails ahead is read again by the probe, which reports it
  // once, with its path, as before.
  io.faults_[tree.dir("b") + "/memory.current"] = EIO;
  const auto r = pass(*c);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].err, EIO);
  EXPECT_EQ(r.errors[0].path, tree.dir("b") + "/memory.current");
  EXPECT_EQ(c->latest()->read_errors[static_cast<size_t>(FileKind::current)], 1u);
  EXPECT_FALSE(view(*c, "b").probe.current.has_value()) << "no value this pass";
  EXPECT_EQ(view(*c, "a").probe.current, (10u << 20) + (1u << 20)) << "the others read as ever";
  io.faults_.clear();
  pass(*c);
  EXPECT_EQ(view(*c, "b").probe.current, 1u << 20);
}

TEST_F(CollectorTest, ReadErrorKeepsOldValuesAndPendingChange) {
  auto c = make();
  pass(*c);
  const auto before = view(*c, "b").stat;
  io.faults_[tree.dir("b") + "/memory.stat"] = EIO;
  grow("b", 10000);
  auto r = pass(*c);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].err, EIO);
  EXPECT_EQ(r.errors[0].path, tree.dir("b") + "/memory.stat");
  EXPECT_EQ(c->latest()->read_errors[static_cast<size_t>(FileKind::stat)], 1u);
  EXPECT_EQ(view(*c, "b").stat, before);
  EXPECT_EQ(view(*c, "b").pending, 10000u);
  io.faults_.clear();
  pass(*c);
  EXPECT_EQ(reads(*c, "b", ReadReason::threshold), 1u) << "the next pass retries";
}

TEST_F(CollectorTest, OutOfFileDescriptorsLeavesTheNewCgroupOutAndCountsIt) {
  auto c = make();
  pass(*c);
  tree.add("late", spec(1 << 20));
  {
    // Room for the walk (three at once) but not for the new cgroup's six.
    fixtures::FdLimitScope limit(4);
    c->set_config(cfg);
    auto r = pass(*c);
    EXPECT_FALSE(has(*c, "late"));
    EXPECT_EQ(r.left_out.fds_exhausted, 1u);
    EXPECT_EQ(c->latest()->left_out.fds_exhausted, 1u) << "published for memcg_exporter_cgroups_left_out";
    EXPECT_EQ(r.removed, 0u);
    for (const auto& e : r.errors) EXPECT_NE(e.err, EMFILE) << "counted, not an error per cgroup per rescan: " << e.message();
  }
  c->set_config(cfg);
  auto r = pass(*c);
  EXPECT_TRUE(has(*c, "late")) << "collected once descriptors are available again";
  EXPECT_EQ(r.left_out.total(), 0u);
}

TEST_F(CollectorTest, EmfileDuringARescanDropsNothing) {
  // 0.1 took the subtrees a rescan could not list for removed: under fd
  // pressure every rescan dropped and re-added them, restarting their rates.
  auto c = make();
  pass(*c);
  const size_t collected = c->latest()->cgroups.size();
  tree.add("a/late", spec(1 << 20));
  for (int round = 0; round < 3; ++round) {
    fixtures::FdLimitScope limit(1);  // the root opens, nothing below it
    c->set_config(cfg);
    auto r = pass(*c);
    EXPECT_EQ(r.removed, 0u) << "round " << round;
    EXPECT_EQ(r.added, 0u);
    EXPECT_EQ(c->latest()->cgroups.size(), collected);
  }
  EXPECT_EQ(reads(*c, "a/x", ReadReason::initial), 1u) << "state kept, not started over";
  c->set_config(cfg);
  pass(*c);
  EXPECT_TRUE(has(*c, "a/late"));
  EXPECT_EQ(c->latest()->cgroups.size(), collected + 1);
}

TEST_F(CollectorTest, FdBudgetKeepsAStableSetAndFillsFreedRoom) {
  tree.add("b/z", spec(1 << 20));
  auto c = make();
  const size_t all = 6;  // "/", a, a/x, a/y, b, b/z
  c->set_fd_budget(4 * kMinFdsPerCgroup);
  auto r = pass(*c);
  ASSERT_EQ(c->latest()->cgroups.size(), 4u);
  EXPECT_EQ(r.left_out.fd_budget, all - 4);
  EXPECT_TRUE(has(*c, "/") && has(*c, "a") && has(*c, "b")) << "shallowest first";
  EXPECT_LE(c->latest()->cgroup_fds, 4 * kMinFdsPerCgroup);
  EXPECT_EQ(c->latest()->cgroup_fd_budget, 4 * kMinFdsPerCgroup);
  std::vector<std::string> first;
  for (const auto& v : c->latest()->cgroups) first.push_back(v.id->path);
  for (int round = 0; round < 4; ++round) {
    c->set_config(cfg);
    r = pass(*c);
    EXPECT_EQ(r.added + r.removed, 0u) << "round " << round << ": the set must not flap";
    std::vector<std::string> now;
    for (const auto& v : c->latest()->cgroups) now.push_back(v.id->path);
    EXPECT_EQ(now, first);
    EXPECT_EQ(r.left_out.fd_budget, all - 4);
  }
  for (const auto& p : first) EXPECT_EQ(reads(*c, p, ReadReason::initial), 1u) << p;
  // A collected cgroup goes away: a waiting one takes its room at the next rescan.
  ASSERT_TRUE(has(*c, "a/x"));
  tree.remove("a/x");
  c->set_config(cfg);
  r = pass(*c);
  EXPECT_EQ(r.removed, 1u);
  EXPECT_EQ(r.added, 1u);
  EXPECT_EQ(c->latest()->cgroups.size(), 4u);
  EXPECT_EQ(r.left_out.fd_budget, all - 1 - 4);
}

// The daemon's own memory limit caps the descriptors too: where it is the
// lower budget, the cgroups without room are counted under memory_budget
// (and under fd_budget where RLIMIT_NOFILE's is lower); off, it caps nothing.
TEST_F(CollectorTest, MemoryBudgetCapsLikeTheFdBudgetAndSaysWhich) {
  tree.add("b/z", spec(1 << 20));
  auto c = make();
  const size_t all = 6;  // "/", a, a/x, a/y, b, b/z
  const uint64_t three = cgroupfs::kBaseMemoryReserve + 3 * kMinFdsPerCgroup * cgroupfs::kMemoryPerFd;
  ASSERT_EQ(cgroupfs::memory_fd_budget(three), 3 * kMinFdsPerCgroup);
  c->set_fd_budget(5 * kMinFdsPerCgroup);
  c->set_memory_budget(three);
  auto r = pass(*c);
  EXPECT_EQ(c->latest()->cgroups.size(), 3u);
  EXPECT_EQ(r.left_out.memory_budget, all - 3);
  EXPECT_EQ(r.left_out.fd_budget, 0u);
  EXPECT_EQ(c->latest()->cgroup_fd_budget, 3 * kMinFdsPerCgroup);
  EXPECT_EQ(c->latest()->memory_budget, three);
  EXPECT_TRUE(has(*c, "/") && has(*c, "a") && has(*c, "b")) << "shallowest first";
  // A larger limit (a reload after MemoryMax= was raised): RLIMIT_NOFILE's
  // budget binds now, the collected three stay and two more come in.
  c->set_memory_budget(three * 4);
  c->set_config(cfg);
  r = pass(*c);
  EXPECT_EQ(c->latest()->cgroups.size(), 5u);
  EXPECT_EQ(r.removed, 0u);
  EXPECT_EQ(r.left_out.memory_budget, 0u);
  EXPECT_EQ(r.left_out.fd_budget, all - 5);
  // No limit: RLIMIT_NOFILE's alone.
  c->set_memory_budget(0);
  c->set_fd_budget(UINT64_MAX);
  c->set_config(cfg);
  r = pass(*c);
  EXPECT_EQ(c->latest()->cgroups.size(), all);
  EXPECT_EQ(r.left_out.total(), 0u);
  EXPECT_EQ(c->latest()->memory_budget, 0u);
}

// Descriptors are the lowest free ones: every slot up to one above the
// highest open descriptor taken, so that the next ones opened are in order.
static std::vector<sys::UniqueFd> take_free_slots() {
  int top = -1;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    top = std::max(top, std::stoi(e.path().filename().string()));
  std::vector<sys::UniqueFd> taken;
  for (;;) {
    taken.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!taken.back().valid() || taken.back().get() > top) return taken;
  }
}

// A pass reads one kind of file of every cgroup (memory.current, every
// probe): each kind is opened across the cgroups found together, kind after
// kind, so that the kernel's structures for the files of one kind lie
// together (cgroup_table.cpp, CgroupTable::open_kind). Seen here as the
// descriptors: a kind's files hold a run of them, the kinds in table order.
TEST_F(CollectorTest, KeptFilesAreOpenedKindByKind) {
  for (int i = 0; i < 12; ++i) tree.add("b/c" + std::to_string(i), spec(1 << 20));
  const auto slots = take_free_slots();
  auto c = make();
  pass(*c);
  std::map<std::string, std::vector<int>> fds;  // file name -> descriptors, ascending
  const std::string root = tree.root() + "/";
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    // Files of the cgroups below the root only: the root's own may lack some.
    if (!ec && target.starts_with(root) && target.rfind('/') > root.size() - 1)
      fds[target.substr(target.rfind('/') + 1)].push_back(std::stoi(e.path().filename().string()));
  }
  const std::vector<std::string> kinds = {"memory.stat", "memory.current", "memory.events", "memory.pressure", "memory.peak"};
  int last = -1;
  for (const auto& kind : kinds) {
    auto& v = fds[kind];
    std::sort(v.begin(), v.end());
    ASSERT_GE(v.size(), 16u) << kind;  // a, a/x, a/y, b and b/c0..c11
    EXPECT_EQ(static_cast<size_t>(v.back() - v.front() + 1), v.size()) << kind << ": not one run";
    EXPECT_GT(v.front(), last) << kind << " opened before the kind ahead of it";
    last = v.back();
  }
}

// A kept kernfs file holds a page of kernel memory from its first read on
// (its seq_file buffer): the limit files and memory.events.local are not
// held at all.
static_assert(kMaxFdsPerCgroup == 1 + 6 + 2,
              "a cgroup holds its directory, six kept files, memory.swap.events and cgroup.events");

TEST_F(CollectorTest, PolledExtrasAreKeptOnlyWithRoomAndGiveItBackToCgroups) {
  // Unlimited: every cgroup keeps its kept_if_room files open as well.
  uint64_t all_fds = 0;
  {
    auto c = make();
    pass(*c);
    all_fds = c->latest()->cgroup_fds;
  }
  const uint64_t root_fds = all_fds - 4 * kMaxFdsPerCgroup;  // a, a/x, a/y and b hold nine each
  ASSERT_LT(root_fds, kMinFdsPerCgroup);
  // Room for every cgroup with the least it needs: all collected, the
  // extras kept by the first ones added closed again to make room for the
  // last, and every limit still read (opened and closed: never kept).
  tree.write("a/y", "memory.max", "1048576\n");
  tree.write("b", "memory.max", "2097152\n");
  auto c = make();
  c->set_fd_budget(root_fds + 4 * kMinFdsPerCgroup);
  auto r = pass(*c);
  EXPECT_EQ(c->latest()->cgroups.size(), 5u);
  EXPECT_EQ(r.left_out.total(), 0u);
  EXPECT_EQ(c->latest()->cgroup_fds, root_fds + 4 * kMinFdsPerCgroup);
  EXPECT_EQ(view(*c, "a/y").stat->limits[lim_max]->value, 1048576u);
  EXPECT_EQ(view(*c, "b").stat->limits[lim_max]->value, 2097152u);
  // A limit changed later is seen at the next limits read.
  tree.write("a/y", "memory.max", "3145728\n");
  tree.write("b", "memory.max", "4194304\n");
  for (int i = 0; i < 72; ++i) pass(*c);  // limits_max_age (60 s), then the next max_age (10 s) read
  EXPECT_EQ(view(*c, "a/y").stat->limits[lim_max]->value, 3145728u);
  EXPECT_EQ(view(*c, "b").stat->limits[lim_max]->value, 4194304u);
}

TEST_F(CollectorTest, RecreatedCgroupStartsOver) {
  auto c = make();
  pass(*c);
  auto body = tree.spec("b").stat;
  tree.set_stat("b", body.set("pgfault", 5000));
  grow("b", 1 << 20);
  pass(*c);
  const uint64_t old_inode = view(*c, "b").id->inode;
  EXPECT_EQ(view(*c, "b").reads[static_cast<size_t>(ReadReason::threshold)], 1u);

  tree.recreate("b", spec(1 << 20));  // pgfault back to 100
  c->set_config(cfg);
  auto r = pass(*c);
  EXPECT_EQ(r.added, 1u);
  EXPECT_EQ(r.removed, 1u);
  const auto& v = view(*c, "b");
  EXPECT_NE(v.id->inode, old_inode);
  EXPECT_EQ(v.reads[static_cast<size_t>(ReadReason::initial)], 1u);
  EXPECT_EQ(v.reads[static_cast<size_t>(ReadReason::threshold)], 0u) << "state started over";
  for (size_t i = 0; i < parse::kStatKeyCount; ++i)
    EXPECT_FALSE(v.stat->rate(i)) << "no rate across the recreation, so never a negative one";
  EXPECT_EQ(stat(*c, "b", "pgfault"), 100u);
}

TEST_F(CollectorTest, ReadCostsAccumulatePerCgroupAndInTheHistogram) {
  clock.step = 3us;  // every timed read takes 3 µs of wall time
  clock.cpu_step = 2us;  // and each batch of them 2 µs of CPU, shared out by wall time
  auto c = make();
  const auto r1 = pass(*c);
  grow("b", 1 << 20);
  const auto r2 = pass(*c);
  const auto& v = view(*c, "b");
  EXPECT_EQ(v.read_wall, Duration(6us));
  ASSERT_EQ(r1.reads, 5u);
  EXPECT_EQ(v.read_cpu, Duration(2us) / 5 + Duration(2us) / static_cast<int>(r2.reads));
  const auto& h = c->latest()->stat_read_seconds;
  EXPECT_EQ(h.count, 5u + 2u);  // 5 initial reads, then b and its parent, the root
  EXPECT_EQ(h.counts[2], h.count) << "3 µs lands in the (2.5 µs, 5 µs] bucket";
}

TEST_F(CollectorTest, SnapshotsShareOneRosterUntilTheSetOrARuleChanges) {
  auto c = make();
  pass(*c);
  const auto first = c->latest()->roster;
  ASSERT_TRUE(first);
  ASSERT_EQ(first->ids.size(), c->latest()->cgroups.size());
  for (size_t i = 0; i < first->ids.size(); ++i) {
    EXPECT_EQ(c->latest()->cgroups[i].id, first->ids[i].get());
    EXPECT_EQ(c->latest()->cgroups[i].settings, first->settings[i].get());
  }
  pass(*c);
  c->set_config(cfg);  // a rescan that finds the same cgroups under the same rules
  pass(*c);
  EXPECT_EQ(c->latest()->roster, first) << "passes and an unchanged rescan publish the same roster";

  tree.add("c", spec(1 << 20));
  c->set_config(cfg);
  pass(*c);
  const auto added = c->latest()->roster;
  EXPECT_NE(added, first);
  EXPECT_EQ(added->ids.size(), first->ids.size() + 1);

  auto with_rule = cfg;
  with_rule.rules.push_back({*config::Glob::compile("c", nullptr), std::nullopt, 30s, {}, {}});
  with_rule.resolve();
  c->set_config(with_rule);
  pass(*c);
  EXPECT_NE(c->latest()->roster, added) << "a rule changed: new settings, new roster";
  EXPECT_EQ(view(*c, "c").settings->max_age, Duration(30s));

  tree.remove("c");
  c->set_config(with_rule);  // a fixture's unlinked files still read: the rescan finds it gone
  pass(*c);
  EXPECT_FALSE(has(*c, "c"));
  EXPECT_EQ(c->latest()->roster->ids.size(), c->latest()->cgroups.size());
}

TEST_F(CollectorTest, ReadsInABatchShareTheirClockReadings) {
  // CLOCK_THREAD_CPUTIME_ID is a system call: n memory.stat reads of a pass
  // take two CPU-clock readings per batch of kStatBatch, and each read is
  // charged the batch's CPU in proportion to its wall time.
  tree.add("many", spec(40 << 20));
  for (int i = 0; i < 40; ++i) tree.add("many/c" + std::to_string(i), spec(1 << 20));
  clock.cpu_step = 64us;
  clock.step = 1us;  // every read takes 1 µs of wall time...
  io.on_pread = [&](std::string_view path) {  // ...but this one, 4 µs
    if (path.ends_with("/many/c7/memory.stat")) clock.advance(3us);
  };
  auto c = make();
  const auto r = pass(*c);
  ASSERT_EQ(r.reads, 46u);  // root, a, a/x, a/y, b, many and its 40
  const auto latest = c->latest();
  Duration total{0};
  for (const auto& v : latest->cgroups) total += v.read_cpu;
  const size_t batches = (46 + CgroupReader::kStatBatch - 1) / CgroupReader::kStatBatch;
  EXPECT_EQ(total, Duration(64us) * static_cast<int>(batches)) << "each batch's CPU, shared out in full";
  EXPECT_EQ(latest->read_cpu, Duration(64us) * static_cast<int>(2 * batches + 1))
      << "the read phase: two CPU-clock readings per batch, and the phase's closing one";
  // c7's read took four times the wall of its batch-mates, so four times their CPU.
  EXPECT_EQ(view(*c, "many/c7").read_wall, Duration(4us));
  EXPECT_EQ(view(*c, "many/c6").read_wall, Duration(1us));
  EXPECT_NEAR(to_seconds(view(*c, "many/c7").read_cpu) / to_seconds(view(*c, "many/c6").read_cpu), 4.0, 1e-3);  // whole nanoseconds
}

// A thread that never waits: every clock call takes 1 µs, of wall and of CPU
// time alike, so work between two readings costs what its readings say.
class BusyClock final : public Clock {
 public:
  TimePoint now() noexcept override { return tick(); }
  Duration thread_cpu() noexcept override { return tick() - TimePoint{}; }
  WallTime wall() noexcept override { return ManualClock::kWallStart; }

 private:
  TimePoint tick() noexcept {
    const TimePoint t = t_;
    t_ += 1us;
    return t;
  }
  TimePoint t_{};
};

TEST_F(CollectorTest, PhasesCoverThePassUpToAndIncludingPublishing) {
  // process_cpu_seconds_total minus the phases is meant to be the web
  // server's: the collector's own work, dropping the gone and publishing the
  // snapshot included (pass_duration is taken there), must be in a phase,
  // and what the thread spends between two passes in the wait phase.
  BusyClock busy;
  Collector c(tree.root(), cfg, busy, io);
  const Duration before = busy.thread_cpu();
  c.run_pass();
  busy.thread_cpu();  // the wait between: 5 µs of readings
  busy.thread_cpu();
  busy.thread_cpu();
  busy.thread_cpu();
  busy.thread_cpu();
  c.run_pass();
  c.run_pass();
  const Duration after = busy.thread_cpu();
  const auto s = c.latest();
  EXPECT_EQ(s->wait_cpu, 2 * 2us + 5us) << "each pass after the first counts the readings since the last one ended, "
                                           "its own opening two (now() and the CPU clock) included";
  const Duration phases = s->probe_cpu + s->read_cpu + s->rescan_cpu + s->wait_cpu;
  // Left out: the first pass's opening readings (2 µs), the third pass's
  // last share (freeing the second snapshot), which shows in the next
  // snapshot (1 µs), and the closing reading of the test (1 µs).
  EXPECT_EQ(after - before - phases, 2us + 1us + 1us)
      << "the clock readings around the passes and nothing else; "
      << (after - before).count() << " ns spent, phases " << phases.count() << " ns";
}

TEST_F(CollectorTest, ConfigChangeAppliesNewRulesAndKeepsState) {
  auto c = make();
  pass(*c);
  auto next = cfg;
  next.rules.push_back({*config::Glob::compile("b", nullptr), uint64_t{1}, std::nullopt, std::nullopt, {}});
  next.resolve();
  c->set_config(next);
  grow("b", 2);
  auto r = pass(*c);
  EXPECT_EQ(r.added, 0u) << "cgroups that still match keep their state";
  EXPECT_EQ(view(*c, "b").settings->threshold, 1u);
  EXPECT_EQ(reads(*c, "b", ReadReason::threshold), 1u);
  EXPECT_EQ(reads(*c, "b", ReadReason::initial), 1u);
}

TEST_F(CollectorTest, SnapshotsAreImmutable) {
  auto c = make();
  pass(*c);
  auto s1 = c->latest();
  const auto anon = *s1->cgroups.back().stat->values->get(0);
  tree.set_stat("b", tree.spec("b").stat.set("anon", 1));
  grow("b", 1 << 20);
  pass(*c);
  EXPECT_EQ(s1->pass, 1u);
  EXPECT_EQ(*s1->cgroups.back().stat->values->get(0), anon);
  EXPECT_EQ(c->latest()->pass, 2u);
}

TEST_F(CollectorTest, ConcurrentReadersNeverCauseReads) {
  auto c = make();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> loads{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i)
    readers.emplace_back([&] {
      while (!stop.load()) {
        auto s = c->latest();
        for (const auto& v : s->cgroups) ASSERT_TRUE(v.id);
        loads.fetch_add(1);
      }
    });
  // Interleave for real: every reader has loaded before the first pass, and
  // readers load again after each pass (bounded waits; no timing assertions).
  auto wait_loads = [&](uint64_t at_least) {
    for (int spin = 0; spin < 200000 && loads.load() < at_least; ++spin) std::this_thread::yield();
  };
  wait_loads(4);
  uint64_t total_reads = 0;
  for (int i = 0; i < 50; ++i) {
    total_reads += pass(*c).reads;
    wait_loads(loads.load() + 1);
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_GE(loads.load(), 4u + 50u);
  // Only the collector's own reasons: one initial read each, then max_age
  // refreshes (no cgroup changes, so no threshold, event or forced reads).
  uint64_t initial = 0, refresh = 0;
  for (const auto& v : c->latest()->cgroups) {
    initial += v.reads[static_cast<size_t>(ReadReason::initial)];
    refresh += v.reads[static_cast<size_t>(ReadReason::max_age)];
    EXPECT_EQ(v.reads[static_cast<size_t>(ReadReason::threshold)] + v.reads[static_cast<size_t>(ReadReason::event)] +
                  v.reads[static_cast<size_t>(ReadReason::forced)], 0u);
  }
  EXPECT_EQ(initial, 5u);
  EXPECT_EQ(total_reads, initial + refresh);
  EXPECT_GE(refresh, 5u * 5u) << "every 9 s or sooner over 50 s";
}

TEST_F(CollectorTest, QuietPassAllocationsDoNotGrowWithCgroups) {
  cfg.defaults.max_age = 1h;  // no refresh comes due during the measured pass
  cfg.resolve();
  auto quiet_allocs = [&](int extra) {
    fixtures::Tree t;
    for (int i = 0; i < extra; ++i) t.add("c" + std::to_string(i), spec(1 << 20));
    Collector c(t.root(), cfg, clock, io);
    c.run_pass();
    clock.advance(1s);
    c.run_pass();  // warm-up: buffers and scratch sized
    clock.advance(1s);
    testing::AllocationCounter allocs;
    c.run_pass();
    return allocs.count();
  };
  const size_t small = quiet_allocs(2), large = quiet_allocs(40);
  EXPECT_EQ(small, large) << "a quiet pass allocates per pass (the snapshot), never per cgroup";
  EXPECT_LE(small, 3u);
}

}  // namespace
}  // namespace memcg
