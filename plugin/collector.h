// The collection pass, composed of the set of cgroups (cgroup_table.h), the
// reads of one cgroup (cgroup_reader.h) and the pure cache decisions
// (cache/): discovery every rescan_interval, cheap probes of every cgroup,
// pending-change propagation, the flush decision (and read budget),
// memory.stat reads, and publication of an immutable Snapshot. All cgroupfs
// I/O happens on the thread that calls run_pass(); readers only call latest()
// or current().
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "plugin/cache/budget.h"
#include "plugin/cache/pending.h"
#include "plugin/cgroup_reader.h"
#include "plugin/cgroup_table.h"
#include "plugin/cgroupfs/file_io.h"
#include "plugin/cgroupfs/own_memory.h"
#include "plugin/clock.h"
#include "plugin/pass_report.h"
#include "plugin/publication.h"
#include "plugin/quiet_lane.h"
#include "plugin/root_pressure.h"
#include "plugin/runtime/identity_sources.h"
#include "plugin/snapshot.h"
#include "plugin/tombstones.h"

namespace memcg {

class Collector {
 public:
  Collector(std::string root, config::Config config, Clock& clock = Clock::system(),
            cgroupfs::FileIo& io = cgroupfs::FileIo::system());
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  PassReport run_pass();

  // Between passes, when events_fd() is readable: reads the event files
  // the kernel flagged (memory.events, .local, swap.events) of each cgroup,
  // drops cgroups found gone (into tombstones) and, if the OOM killer ran
  // (or a cgroup went), publishes a snapshot with the new counters (on
  // demand: owes it to the next reader), so an OOM kill is served within
  // milliseconds of the kernel counting it, whatever probe_interval is;
  // other changes are published by the next pass, which also reads
  // memory.stat of the cgroups whose notable events moved, as if its own
  // probe had seen them. True if it published or owes a snapshot.
  bool run_event_pass();
  // Readable when the kernel flagged an event file of a collected cgroup;
  // -1 without an epoll set.
  int events_fd() const noexcept { return table_.events_fd(); }
  // Readable when a collected cgroup's last task exited (its cgroup.events
  // flagged): run_event_pass then reads its event files before the cgroup
  // can be removed. The daemon spaces its wake-ups for it apart from events_fd()'s
  // (PassSchedule::kExitSpacing).
  int exits_fd() const noexcept { return table_.exits_fd(); }

  // The latest published snapshot (an empty one with pass == 0 before the
  // first pass). Safe from any thread; never blocks the collector.
  std::shared_ptr<const Snapshot> latest() const { return publication_.latest(); }

  // Snapshots on demand (publication.h), for a daemon whose readers come
  // less often than its passes; from the pass thread, before the first pass.
  // False (every pass publishes) when the wake-up descriptor cannot be made.
  bool publish_on_demand() { return publication_.set_on_demand(); }
  // Any thread: the state as of the last pass, built for this reader if owed
  // (waits at most `patience` for the pass thread, then the latest).
  std::shared_ptr<const Snapshot> current(Duration patience) { return publication_.current(patience); }
  // Readable when a reader waits for a snapshot (-1 unless on demand); the
  // pass thread then calls serve_wanted() between passes.
  int wanted_fd() const noexcept { return publication_.wanted_fd(); }
  void serve_wanted();

  // Takes effect on the next pass, which rescans: new discovery filters apply,
  // every cgroup gets the settings of its (new) matching rule, and cached state
  // of cgroups still present is kept. Call from the thread that runs passes.
  void set_config(config::Config config);
  const config::Config& config() const noexcept { return config_; }
  const std::string& root() const noexcept { return root_; }
  // Descriptors the collected cgroups may hold (CgroupTable::set_fd_budget);
  // from the thread that runs passes, effective at the next rescan.
  void set_fd_budget(uint64_t max_fds) noexcept { table_.set_fd_budget(max_fds); }
  // The memory limit the collected cgroups' descriptors are held within
  // (cgroupfs::memory_fd_budget; 0: none): the daemon's own, or the
  // configuration's collector.memory_budget. Likewise effective at the next
  // rescan; collected cgroups are never dropped for it.
  void set_memory_budget(uint64_t bytes) noexcept {
    memory_budget_ = bytes;
    table_.set_memory_fd_budget(bytes ? cgroupfs::memory_fd_budget(bytes) : UINT64_MAX);
  }
  // What the kernel is (cgroupfs::probe_kernel), served with every snapshot
  // from the next one on; from the thread that runs passes.
  void set_kernel(std::shared_ptr<const cgroupfs::KernelFacts> k) noexcept {
    table_.set_peak_reset(k && k->has("memory_peak_fd_reset"));
    kernel_ = std::move(k);
  }
  // Tests and benchmarks: without the quiet lane (quiet_lane.h) every quiet
  // probe and its flush decision are taken in full, as the lane must match.
  void set_quiet_lane(bool on) noexcept { lane_on_ = on; }
  // Tests: flag event files by hand (cgroupfs/event_poller.h); before the first pass.
  void set_event_poller(std::unique_ptr<cgroupfs::EventPoller> p) { table_.set_event_poller(std::move(p)); }
  void set_exit_poller(std::unique_ptr<cgroupfs::EventPoller> p) { table_.set_exit_poller(std::move(p)); }

  // Any thread: the next pass re-reads memory.stat of every cgroup whose path
  // matches `glob` (reason "forced" unless another reason applies). False when
  // kMaxPendingRefresh different globs already wait for the next pass (the
  // same glob again is accepted and merged): a flood cannot grow memory or
  // the next pass's matching work.
  bool request_refresh(config::Glob glob);
  static constexpr size_t kMaxPendingRefresh = 32;

 private:
  // memory.stat of the cgroups in batch_, fetched together (fewer CPU-clock
  // reads), then each parsed with its due companions.
  void read_batch(TimePoint now, PassReport& report);
  // False when the read left no record (an error: retried next pass).
  bool apply_read(CgroupEntry& e, cache::ReadReason reason, const CgroupReader::Fetched& f, TimePoint now,
                  PassReport& report);
  // Entry i, probed quiet this pass and just read: its lane record again
  // with the new due time, where it may join (quiet_lane.h).
  void rejoin_lane(size_t i);
  // Entry i's lane record from `in`, its probe's bytes and this pass's bucket.
  void take_lane(size_t i, const CgroupEntry& e, const cache::FlushInput& in);
  Duration lookahead() const noexcept { return config_.collector.probe_interval * 3 / 2; }
  void decide(TimePoint now, PassReport& report);  // probes taken: which cgroups want a read -> wanted_
  void read_wanted(TimePoint now, PassReport& report);
  // A pass ended: its number and timing into `report`, then a snapshot built
  // or owed.
  void publish(TimePoint started, Duration probe_from, PassReport& report);
  // Of the table as of last_pass_, stored for the readers; its CPU from
  // `cpu0` (the caller's last reading) counts as probe work, up to the
  // reading it returns.
  Duration build_snapshot(Duration cpu0);
  void fill(Snapshot& snap);
  void store(std::shared_ptr<const Snapshot> next);
  // The table's dropped cgroups -> tombstones_ (their unread kills
  // recovered first); expiry.
  void bury_departed(TimePoint now, PassReport& report);
  // removed_kills.h, in collector_kills.cpp: each parent's base where its
  // counts and its children's stood still; at a removal, the parent's and
  // children's counts read again and what they leave unexplained given to
  // the one removed child that was not read after its exit.
  void settle_kill_ledgers(TimePoint now);
  void recover_removed_kills(std::vector<CgroupEntry>& departed, TimePoint now, PassReport& report);
  void settle_removal(size_t parent, std::span<CgroupEntry* const> removed, TimePoint now, PassReport& report);
  size_t subtree_end(size_t parent) const;
  bool read_children_fresh(size_t parent, TimePoint now, KillCounts& sum, PassReport& report);
  bool all_descendants_collected(size_t parent);
  KillCounts live_children(size_t parent) const;
  static void give(CgroupEntry& e, const KillCounts& given);
  std::shared_ptr<const Roster> shared_roster();
  void mark_forced();   // refresh requests from other threads -> CgroupEntry::forced
  void count_skip(CgroupEntry& e, PassReport& report) noexcept;
  void refresh_records(bool rescanned, TimePoint now, PassReport& report);
  void probe_all(TimePoint now, PassReport& report);
  void read_all_ahead(TimePoint now, bool host_swap);
  void read_psi_gate(bool rescanned);
  cache::FlushInput flush_input(const CgroupEntry& e, size_t i, Duration lookahead) const noexcept;
  CgroupReader::EventFiles flags_of(const CgroupEntry& e) const noexcept;

  std::string root_;
  config::Config config_;
  Clock& clock_;
  cgroupfs::FileIo& io_;

  Counters counters_;  // totals since start, published with every snapshot
  CgroupTable table_;
  CgroupReader reader_;
  RootPressure root_pressure_;  // the collection root's memory.pressure: each pass's PSI gate
  bool need_rescan_ = true;
  TimePoint last_rescan_{};
  WallTime pass_wall_{};  // the wall clock at the pass's start: timestamps of its reads derive from it
  WallTime last_good_rescan_wall_{};  // the last rescan that could read the root
  uint64_t passes_ = 0;
  struct PassMeta {
    uint64_t number = 0;
    TimePoint started{};
    Duration duration{0};
    WallTime ended_wall{};
  } last_pass_;  // what a snapshot built after the pass says of it
  uint64_t publications_ = 0;
  // The thread's CPU clock and probe total when the last pass ended: the
  // next pass counts what the wait between spent that no phase did.
  std::optional<Duration> ended_cpu_;
  Duration ended_probe_cpu_{0};
  Tombstones tombstones_;
  // settle_kill_ledgers' sums, kept between passes so it allocates nothing.
  std::vector<KillCounts> ledger_children_;
  std::vector<TimePoint> ledger_newest_;
  std::vector<unsigned char> ledger_unknown_;
  std::string kills_buf_;  // a parent's cgroup.stat

  // Reused between passes so the steady state allocates nothing per cgroup.
  std::vector<cache::ProbeDelta> deltas_;
  std::vector<uint32_t> moving_;  // the cgroups whose probe saw a change, ascending
  cache::SparseSubtreeChange subtree_;
  std::span<const uint64_t> change_;  // this pass's subtree change of every cgroup (subtree_'s)
  std::vector<unsigned char> moved_;
  std::vector<CgroupReader::ProbeAhead> ahead_;  // every cgroup's memory.current, read before any is probed
  // How each cgroup's probe went this pass: the quiet lane's records are
  // made from quiet probes the decision left alone (quiet_lane.h). With the
  // lane's bytes again: kInLane before the due time in the record's bucket;
  // kLaneBucket in a new bucket (probed quiet from the record, then as
  // kInLane); kLaneDue at the due time (probed quiet, decided in full as kQuiet).
  enum Quiet : unsigned char { kNotQuiet, kQuiet, kInLane, kLaneBucket, kLaneDue };
  std::vector<unsigned char> quiet_;
  QuietLanes lanes_;
  bool pass_host_swap_ = true;  // this pass's io_.host_has_swap()
  int64_t pass_bucket_ = 0;     // this pass's cache::WindowMax bucket (the lane records')
  bool lane_on_ = true;
  uint64_t config_generation_ = 0;
  std::vector<cache::ReadCandidate> wanted_;
  std::vector<unsigned char> chosen_;
  std::vector<std::pair<uint32_t, cache::ReadReason>> batch_;  // reads of this pass: entry index, reason
  cache::BudgetMeter budget_;

  std::mutex refresh_mu_;
  std::vector<config::Glob> refresh_;  // guarded by refresh_mu_

  std::shared_ptr<const std::vector<std::shared_ptr<const config::Settings>>> rules_;  // config_.resolved()
  std::shared_ptr<const cgroupfs::KernelFacts> kernel_;
  uint64_t memory_budget_ = 0;  // set_memory_budget's bytes, served in snapshots
  std::shared_ptr<const Roster> roster_;  // the table's ids and settings as of roster_generation_
  uint64_t roster_generation_ = 0;
  runtime::IdentitySources identity_;  // hook records and Engine APIs, bound to their cgroups

  Publication publication_;
};

}  // namespace memcg
