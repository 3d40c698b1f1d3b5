#include "plugin/collector.h"

#include <algorithm>
#include <cerrno>

#include "plugin/cache/budget.h"

namespace memcg {
namespace {

runtime::SourcesConfig sources_config(const config::Config& c) {
  const auto& cc = c.containers;
  return {.records_dir = cc.records_dir,
          .engine_sockets = {cc.engine_socket(0), cc.engine_socket(1)},
          .podman_user_socket = cc.podman_user_socket,
          .engine_timeout = cc.engine_timeout,
          .rescan_interval = c.collector.rescan_interval,
          .containerd_socket = cc.containerd_socket,
          .containerd_namespaces = cc.containerd_namespaces};
}

std::shared_ptr<const Snapshot> empty_snapshot(const std::string& root) {
  auto empty = std::make_shared<Snapshot>();
  empty->root = root;
  return empty;
}

}  // namespace

Collector::Collector(std::string root, config::Config config, Clock& clock, cgroupfs::FileIo& io)
    : root_(std::move(root)),
      config_(std::move(config)),
      clock_(clock),
      io_(io),
      reader_(root_, clock_, io_, counters_),
      root_pressure_(root_, io_),
      publication_(empty_snapshot(root_)) {
  table_.set_io(io_);
  identity_.configure(sources_config(config_));
}

Collector::~Collector() = default;

void Collector::set_config(config::Config config) {
  identity_.configure(sources_config(config));
  config_ = std::move(config);
  rules_.reset();
  need_rescan_ = true;
  ++config_generation_;  // every quiet lane's due time came from the old one
}

// Names from the identity sources: the cgroups they may name are walked only
// after a rescan or when a source changed.
void Collector::refresh_records(bool rescanned, TimePoint now, PassReport& report) {
  const runtime::ForEachContainerCgroup cgroups = [this](const std::function<void(const runtime::BindCandidate&)>& f) {
    for (const auto& e : table_.entries())
      if (!e.id->identity.container_id.empty())
        f({e.id->path, e.id->depth, e.id->identity.container_id, e.id->identity.runtime});
  };
  std::vector<IoError> errors;
  identity_.refresh(rescanned, cgroups, now, errors);
  for (auto& e : errors) report.add_error(std::move(e));
}

bool Collector::request_refresh(config::Glob glob) {
  std::lock_guard lock(refresh_mu_);
  for (const auto& g : refresh_)
    if (g.pattern() == glob.pattern()) return true;
  if (refresh_.size() >= kMaxPendingRefresh) return false;
  refresh_.push_back(std::move(glob));
  return true;
}

void Collector::read_batch(TimePoint now, PassReport& report) {
  auto& entries = table_.entries();
  std::array<const CgroupEntry*, CgroupReader::kStatBatch> es{};
  std::array<CgroupReader::Fetched, CgroupReader::kStatBatch> fetched{};
  for (size_t start = 0; start < batch_.size(); start += CgroupReader::kStatBatch) {
    const size_t n = std::min(CgroupReader::kStatBatch, batch_.size() - start);
    for (size_t j = 0; j < n; ++j) es[j] = &entries[batch_[start + j].first];
    reader_.fetch_stats({es.data(), n}, {fetched.data(), n}, report);
    for (size_t j = 0; j < n; ++j) {
      const uint32_t i = batch_[start + j].first;
      if (apply_read(entries[i], batch_[start + j].second, fetched[j], now, report)) rejoin_lane(i);
    }
  }
  batch_.clear();
}

bool Collector::apply_read(CgroupEntry& e, cache::ReadReason reason, const CgroupReader::Fetched& f, TimePoint now,
                           PassReport& report) {
  cache::CompanionInput in;
  in.reason = reason;
  if (e.record) {
    in.limits_at = e.record->limits_read_at;
    in.peak_at = e.record->peak_at;
  }
  if (e.has_probe && e.probe.has_psi) in.pressure_at = e.probe.psi_at;
  // Where memory.peak resets per open file, every read takes it: a spike
  // between two probes moves nothing the probes see, and the peak since the
  // last read is the only trace of it.
  in.moved_since_peak = e.moved_since_peak || e.peak_resettable;
  in.pressure_probed = e.has_probe && e.probe.has_psi && e.probe.psi_at == now;
  in.limits_watched = e.limits_watched;
  in.limits_changed = e.limits_owed;
  in.oomd_at = e.oomd_at;
  in.max_age = config_.collector.limits_max_age;
  const cache::CompanionReads take = cache::decide_companions(in, now);
  // Watched from the first periodic limits read on, before it: a write
  // after the read is then announced.
  if (take.limits && reason != cache::ReadReason::initial && in.max_age > Duration::zero()) table_.watch_limits(root_, e);
  CgroupReader::StatRead r = reader_.finish_stat(e, f, take, {now, pass_wall_}, report);
  if (r.gone) e.gone = true;
  if (!r.record) return false;  // an error keeps the old values and the pending change: retried next pass
  if (r.psi_read) {
    e.probe.psi = r.psi;
    e.probe.has_psi = true;
    e.probe.psi_at = now;
    e.psi_mark = r.psi_mark;
  }
  if (take.peak) e.moved_since_peak = false;
  // The highest usage since the last memory.peak read, spikes between two
  // probes included: into the one-minute high, at the time it was read.
  if (r.record->peak_since_last) {
    e.current_max.observe(now, *r.record->peak_since_last);
    e.probe.current_max = e.current_max.max(now);
  }
  if (take.limits) e.limits_owed = false;
  // systemd-oomd's record, and memory.swap.events where the kernel's flag
  // cannot be watched (its fd did not fit the budget).
  if (take.oomd) {
    e.oomd_at = now;
    const auto ev = reader_.read_events(e, {.swap = !e.swap_events_polled, .oomd = true}, now, report);
    e.events_changed_owed = e.events_changed_owed || ev.changed;
  }
  e.first_refresh = reason == cache::ReadReason::initial;
  e.record = std::move(r.record);
  e.read_at = e.record->read_at;
  e.pending = 0;
  e.forced = false;
  ++e.reads[static_cast<size_t>(reason)];
  ++counters_.reads[static_cast<size_t>(reason)];
  ++report.reads;
  e.read_wall += r.wall;
  e.read_cpu += r.cpu;
  counters_.read_seconds.observe(to_seconds(r.wall));
  return true;
}

// Most reads are a quiet cgroup's max_age read: without this, its next pass
// would take the long way only to make the same record with the new due time.
void Collector::rejoin_lane(size_t i) {
  if (quiet_[i] == kNotQuiet) return;
  const CgroupEntry& e = table_.entries()[i];
  if (e.gone) return;
  const cache::FlushInput in = flush_input(e, i, lookahead());
  if (quiet_lane_eligible(e, in, pass_host_swap_)) take_lane(i, e, in);
}

void Collector::take_lane(size_t i, const CgroupEntry& e, const cache::FlushInput& in) {
  lanes_.take(i, {.fd = e.file(FileKind::current).get(),
                  .text = zero_tailed(e.probed_current),
                  .swap_fd = quiet_lane_swap_fd(e, pass_host_swap_),
                  .swap_text = zero_tailed(e.probed_swap),
                  .bucket = pass_bucket_,
                  .due = cache::max_age_due(in)});
}

void Collector::mark_forced() {
  std::vector<config::Glob> refresh;
  {
    std::lock_guard lock(refresh_mu_);
    refresh.swap(refresh_);
  }
  auto& entries = table_.entries();
  for (const auto& g : refresh)
    for (size_t i = 0; i < entries.size(); ++i)
      if (g.matches(entries[i].id->path)) {
        entries[i].forced = true;
        lanes_.drop(i);
      }
}

void Collector::count_skip(CgroupEntry& e, PassReport& report) noexcept {
  ++e.skips;
  ++counters_.skips;
  ++report.skips;
}

// Which of `e`'s polled event files the kernel flagged at the last poll.
CgroupReader::EventFiles Collector::flags_of(const CgroupEntry& e) const noexcept {
  if (!table_.any_flagged()) return {};
  return {.events = e.events_polled && table_.flagged(e, FileKind::events),
          .swap = e.swap_events_polled && table_.flagged(e, FileKind::swap_events),
          .exit = e.exit_polled && table_.flagged(e, FileKind::cgroup_events)};
}

// Every cgroup's memory.current (and swap where wanted), read back to back
// before any is probed; a cgroup in the quiet lane with the same bytes
// before its due time, in the same bucket, is settled here (quiet_[i] =
// kInLane); with the same bytes otherwise, probe_all probes it quiet from
// its record (kLaneBucket, kLaneDue).
void Collector::read_all_ahead(TimePoint now, bool host_swap) {
  auto& entries = table_.entries();
  const size_t n = entries.size();
  ahead_.resize(n);
  quiet_.assign(n, kNotQuiet);
  const bool lane_open = lanes_.open(table_.generation(), n, host_swap, config_generation_, now) && lane_on_;
  uint64_t in_lane = 0;
  for (size_t i = 0; i < n; ++i) {
    const QuietLane* lane = lane_open ? lanes_.find(i) : nullptr;
    // A cgroup whose own event file the kernel flagged takes the long way
    // (its probe reads the file); the others stay in the lane. (A node with
    // one container reclaiming at its memory.high is flagged most passes.)
    if (lane && flags_of(entries[i]).any()) lane = nullptr;
    if (!lane) {
      reader_.read_ahead(entries[i], host_swap, ahead_[i]);
      continue;
    }
    // memory.current, then memory.swap.current where the lane reads it: the
    // order and the reads of the long way (read_ahead).
    reader_.read_lane(lane->fd, FileKind::current, ahead_[i].current);
    if (lane->swap_fd >= 0) reader_.read_lane(lane->swap_fd, FileKind::swap_current, ahead_[i].swap);
    if (same_zero_tailed(ahead_[i].current, lane->text) &&
        (lane->swap_fd < 0 || same_zero_tailed(ahead_[i].swap, lane->swap_text))) {
      const bool settled = now < lane->due && lane->bucket == pass_bucket_;
      quiet_[i] = settled ? kInLane : now < lane->due ? kLaneBucket : kLaneDue;
      in_lane += settled;
      continue;
    }
    if (lane->swap_fd < 0) reader_.read_ahead_swap(entries[i], host_swap, ahead_[i].swap);
    lanes_.drop(i);
  }
  counters_.quiet_probes += in_lane;
  counters_.lane_probes += in_lane;
}

// Every cgroup's cheap files: its change into deltas_, notable events into moved_.
void Collector::probe_all(TimePoint now, PassReport& report) {
  const bool host_swap = pass_host_swap_ = io_.host_has_swap();
  pass_bucket_ = cache::WindowMax::at(now).bucket;
  auto& entries = table_.entries();
  const size_t n = entries.size();
  deltas_.resize(n);
  moving_.clear();
  moved_.assign(n, 0);
  read_all_ahead(now, host_swap);
  read_psi_gate(report.rescanned);
  for (size_t i = 0; i < n; ++i) {
    CgroupEntry& e = entries[i];
    if (quiet_[i] == kInLane) {  // what the quiet probe would do; its rate stays 0
      e.probe.at = now;
      deltas_[i] = cache::ProbeDelta{.valid = true};
      continue;
    }
    if (quiet_[i] == kLaneBucket) {  // the quiet probe into the new bucket; the decision as in the lane
      deltas_[i] = reader_.probe_quiet(e, now).delta;
      lanes_.rebucket(i, pass_bucket_);
      quiet_[i] = kInLane;
      continue;
    }
    lanes_.drop(i);
    if (quiet_[i] == kLaneDue) {  // the same bytes: the quiet probe, then the decision in full
      deltas_[i] = reader_.probe_quiet(e, now).delta;
      continue;
    }
    CgroupReader::Probe p = reader_.probe(e, ahead_[i], now, host_swap, flags_of(e), report);
    deltas_[i] = p.delta;
    if (p.delta.valid && (p.delta.current != 0 || p.delta.swap != 0)) moving_.push_back(static_cast<uint32_t>(i));
    moved_[i] = p.events_moved;
    if (p.gone) {
      e.gone = true;
      continue;
    }
    if (p.quiet) quiet_[i] = kQuiet;
    e.has_probe = true;
    if (p.moved) e.moved_since_peak = true;
  }
}

PassReport Collector::run_pass() {
  PassReport report;
  const TimePoint now = clock_.now();
  pass_wall_ = clock_.wall();
  const Duration cpu0 = clock_.thread_cpu();
  // Snapshots and event wake-ups between the passes counted themselves as probe work.
  if (ended_cpu_) counters_.wait_cpu += (cpu0 - *ended_cpu_) - (counters_.probe_cpu - ended_probe_cpu_);
  Duration cpu1 = cpu0;
  if (need_rescan_ || now - last_rescan_ >= config_.collector.rescan_interval) {
    table_.rescan(root_, config_, report, counters_);
    need_rescan_ = false;
    last_rescan_ = now;
    if (table_.root_ok()) last_good_rescan_wall_ = clock_.wall();
    cpu1 = clock_.thread_cpu();
    counters_.rescan_cpu += cpu1 - cpu0;
  }
  refresh_records(report.rescanned, now, report);
  mark_forced();
  table_.poll_events();
  table_.take_watch_events();
  probe_all(now, report);
  change_ = subtree_.compute(table_.parents(), deltas_, moving_);
  decide(now, report);
  const Duration cpu2 = clock_.thread_cpu();
  read_wanted(now, report);
  const Duration cpu3 = clock_.thread_cpu();
  counters_.probe_cpu += cpu2 - cpu1;  // records, events, probes, propagation, decisions
  counters_.read_cpu += cpu3 - cpu2;   // memory.stat reads with peak, pressure and limits

  table_.erase_gone(report);
  bury_departed(now, report);
  // Every rescan (not every pass: it visits every cgroup's counters).
  if (report.rescanned) settle_kill_ledgers(now);
  if (table_.walk_owed()) need_rescan_ = true;
  report.root_ok = table_.root_ok();
  report.limited = table_.limited();
  report.left_out = table_.left_out();
  report.unwatched = table_.unwatched();
  report.watch_error = table_.watch_error();
  publish(now, cpu3, report);
  return report;
}

// The root's PSI total for this pass's gate (cache/psi_gate.h), before any
// cgroup's memory.pressure is read.
void Collector::read_psi_gate(bool rescanned) {
  if (rescanned) root_pressure_.retry();
  cache::PsiGate gate;
  gate.set(root_pressure_.some_total_us(counters_.file_reads[static_cast<size_t>(FileKind::pressure)]));
  reader_.set_psi_gate(gate);
}

void Collector::bury_departed(TimePoint now, PassReport& report) {
  std::vector<CgroupEntry> departed = table_.take_departed();
  if (!departed.empty()) recover_removed_kills(departed, now, report);
  const auto records = departed.empty() ? nullptr : identity_.records();
  const WallTime wall = departed.empty() ? WallTime{} : pass_wall_ + std::chrono::duration_cast<WallTime::duration>(clock_.now() - now);
  for (const CgroupEntry& e : departed) {
    const runtime::ContainerRecord* r =
        records ? runtime::record_for(*records, e.id->identity.container_id, e.id->path) : nullptr;
    tombstones_.bury(e, r, now, wall);
  }
  tombstones_.expire(now, config_.metrics.removed_retention, config_.metrics.removed_max);
}

bool Collector::run_event_pass() {
  const TimePoint now = clock_.now();
  const Duration cpu0 = clock_.thread_cpu();
  ++counters_.event_wakeups;
  PassReport report;
  bool kill = false, gone = false;
  if (table_.poll_events()) {
    auto& entries = table_.entries();
    for (size_t i = 0; i < entries.size(); ++i) {
      CgroupEntry& e = entries[i];
      const CgroupReader::EventFiles which = flags_of(e);
      if (!e.has_probe || (!which.events && !which.swap && !which.exit)) continue;
      lanes_.drop(i);  // what it owes the next pass, the lane does not look at
      ++counters_.event_wakeup_reads;
      const auto ev = reader_.read_events(e, which, now, report);
      // A cgroup gone now leaves at once: its events fd would stay flagged.
      e.gone = e.gone || ev.gone;
      e.events_changed_owed = e.events_changed_owed || ev.changed;
      e.events_notable_owed = e.events_notable_owed || ev.notable;
      kill = kill || ev.kill;
      gone = gone || ev.gone;
    }
  }
  if (gone) {
    pass_wall_ = clock_.wall();
    table_.erase_gone(report);
    bury_departed(now, report);
  }
  const Duration cpu1 = clock_.thread_cpu();
  counters_.probe_cpu += cpu1 - cpu0;
  // An OOM kill is published at once (on demand: owed to the next reader);
  // counters that only moved (high, max, low, swap events) wait for the
  // next pass, so a cgroup held at memory.high, flagged every 10 ms, costs a
  // read, not a snapshot.
  if (!kill && !gone) return false;
  if (publication_.build_now()) build_snapshot(cpu1);
  return true;
}

cache::FlushInput Collector::flush_input(const CgroupEntry& e, size_t i, Duration lookahead) const noexcept {
  cache::FlushInput in;
  if (e.record) in.last_read = e.read_at;
  in.pending = e.pending;
  in.threshold = e.settings->threshold;
  in.max_age = e.settings->max_age;
  // 1.5 intervals: a read lands partway through a pass and the next pass may
  // start late; the extra half interval absorbs both (passes are discrete, so
  // in practice the read still happens at the same pass as with one interval).
  in.lookahead = lookahead;
  // Phases from the first half of the window: first refreshes spread over
  // [span/2, span] after the initial reads (at most twice the even rate per
  // pass, never a burst of all), and never right after a cgroup's first read.
  if (e.first_refresh) in.phase = cache::refresh_phase(e.id->inode, (e.settings->max_age - lookahead) / 2);
  in.events_moved = moved_[i] != 0;
  in.forced = e.forced;
  return in;
}

void Collector::decide(TimePoint now, PassReport& report) {
  auto& entries = table_.entries();
  const Duration ahead = lookahead();
  wanted_.clear();
  uint64_t lane_skips = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    CgroupEntry& e = entries[i];
    // In the lane (never gone: its probe was not taken) with no change below
    // it either: decide_flush would say "not yet" (quiet_lane.h: the record
    // holds what it looks at). Counted as count_skip does, totals once.
    if (quiet_[i] == kInLane && change_[i] == 0) {
      ++e.skips;
      ++lane_skips;
      continue;
    }
    if (e.gone) continue;
    e.pending += change_[i];
    const cache::FlushInput in = flush_input(e, i, ahead);
    if (auto reason = cache::decide_flush(in, now)) {
      lanes_.drop(i);  // read now: its due time moves
      const double urgency = e.settings->threshold ? static_cast<double>(e.pending) / static_cast<double>(e.settings->threshold) : 1.0;
      wanted_.push_back({static_cast<uint32_t>(i), *reason, urgency, e.record ? now - e.read_at : Duration{0}});
      continue;
    }
    count_skip(e, report);
    if ((quiet_[i] == kQuiet || quiet_[i] == kLaneDue) && quiet_lane_eligible(e, in, pass_host_swap_))
      take_lane(i, e, in);
  }
  counters_.skips += lane_skips;
  report.skips += lane_skips;
}

void Collector::read_wanted(TimePoint now, PassReport& report) {
  auto& entries = table_.entries();
  const double per_second = config_.collector.max_stat_reads_per_second;
  batch_.clear();
  if (per_second <= 0) {
    for (const auto& w : wanted_) batch_.emplace_back(w.index, w.reason);
    read_batch(now, report);
    return;
  }
  // Over budget: the most urgent reads now, the rest served from cache and
  // retried next pass (their pending change and age keep growing, so they rise).
  const uint64_t budget = budget_.take(per_second, config_.collector.probe_interval);
  const auto chosen = cache::choose_reads(wanted_, budget);
  chosen_.assign(entries.size(), 0);
  for (const auto& w : chosen) {
    chosen_[w.index] = 1;
    batch_.emplace_back(w.index, w.reason);
  }
  read_batch(now, report);
  for (const auto& w : wanted_) {
    if (chosen_[w.index]) continue;
    CgroupEntry& e = entries[w.index];
    count_skip(e, report);
    ++counters_.deferred;
    // Past max_age before the next pass: the bound is broken, and counted.
    if (e.record && now - e.read_at + config_.collector.probe_interval > e.settings->max_age) {
      ++e.max_age_violations;
      ++report.max_age_violations;
    }
  }
}

// The cgroups' ids and rules, rebuilt only when the set or a rule changed.
std::shared_ptr<const Roster> Collector::shared_roster() {
  if (roster_ && roster_generation_ == table_.generation()) return roster_;
  const auto& entries = table_.entries();
  auto r = std::make_shared<Roster>();
  r->ids.reserve(entries.size());
  r->settings.reserve(entries.size());
  for (const auto& e : entries) {
    r->ids.push_back(e.id);
    r->settings.push_back(e.settings);
  }
  roster_ = std::move(r);
  roster_generation_ = table_.generation();
  return roster_;
}

// Everything a snapshot shows but the pass's own timing.
void Collector::fill(Snapshot& snap) {
  snap.publication = ++publications_;
  snap.taken_at_wall = last_pass_.ended_wall;
  snap.last_rescan_wall = last_good_rescan_wall_;
  snap.root_ok = table_.root_ok();
  snap.root = root_;
  const auto& entries = table_.entries();
  snap.roster = shared_roster();
  snap.cgroups.reserve(entries.size());
  for (const auto& e : entries) {
    snap.events_polled += e.events_polled ? 1u : 0u;
    snap.limits_watched += e.limits_watched ? 1u : 0u;
    snap.peak_reset_cgroups += e.record && e.record->peak_reset ? 1u : 0u;
    snap.cgroups.push_back(CgroupView{e.id.get(), e.settings.get(), e.probe, e.record, e.pending, e.reads, e.skips,
                                      e.read_wall, e.read_cpu, e.max_age_violations});
  }
  snap.removed = tombstones_.views();
  snap.removed_dropped = tombstones_.dropped();
  snap.cgroups_limited = table_.limited();
  snap.cgroups_no_memory = table_.no_memory();
  snap.rescan_cpu = counters_.rescan_cpu;
  snap.read_cpu = counters_.read_cpu;
  snap.wait_cpu = counters_.wait_cpu;
  snap.left_out = table_.left_out();
  snap.cgroup_fds = table_.open_fds();
  snap.cgroup_fd_budget = table_.fd_budget();
  snap.memory_budget = memory_budget_;
  snap.read_errors = counters_.read_errors;
  snap.file_reads = counters_.file_reads;
  snap.parse_errors = counters_.parse_errors;
  snap.reads = counters_.reads;
  snap.skips = counters_.skips;
  snap.reads_deferred = counters_.deferred;
  snap.reads_unchanged = counters_.stat_unchanged;
  snap.rescans_walked = counters_.rescans_walked;
  snap.rescans_counted = counters_.rescans_counted;
  snap.event_wakeups = counters_.event_wakeups;
  snap.quiet_probes = counters_.quiet_probes;
  snap.lane_probes = counters_.lane_probes;
  snap.event_wakeup_reads = counters_.event_wakeup_reads;
  snap.kills_recovered = counters_.kills_recovered;
  snap.kills_unattributed = counters_.kills_unattributed;
  // Built once per configuration and shared by its snapshots: a pass
  // allocates nothing per rule.
  if (!rules_) rules_ = std::make_shared<const std::vector<std::shared_ptr<const config::Settings>>>(config_.resolved());
  snap.rules = rules_;
  snap.stat_read_seconds = counters_.read_seconds;
  snap.pass_seconds = counters_.pass_seconds;
  snap.records = identity_.records();
  snap.engines = identity_.engine_stats();
  snap.containerd = identity_.containerd_stats();
  snap.kernel = kernel_;
}

void Collector::publish(TimePoint started, Duration probe_from, PassReport& report) {
  last_pass_ = {++passes_, started, clock_.now() - started, clock_.wall()};
  report.pass = last_pass_.number;
  report.cgroups = table_.entries().size();
  report.duration = last_pass_.duration;
  counters_.pass_seconds.observe(to_seconds(last_pass_.duration));
  // The probe phase runs to here: dropping the gone is the pass's own work
  // too (left out, it was part of the "rest" of process_cpu_seconds_total
  // the phases should explain).
  Duration cpu = clock_.thread_cpu();
  counters_.probe_cpu += cpu - probe_from;
  if (publication_.build_now()) cpu = build_snapshot(cpu);
  ended_cpu_ = cpu;
  ended_probe_cpu_ = counters_.probe_cpu;
}

void Collector::serve_wanted() {
  if (publication_.take_request()) build_snapshot(clock_.thread_cpu());
}

Duration Collector::build_snapshot(Duration cpu0) {
  auto snap = std::make_shared<Snapshot>();
  snap->pass = last_pass_.number;
  snap->taken_at = last_pass_.started;
  snap->pass_duration = last_pass_.duration;
  fill(*snap);
  // A copy of every cgroup's view: probe work, as the pass's own phases are.
  const Duration built = clock_.thread_cpu();
  counters_.probe_cpu += built - cpu0;
  snap->probe_cpu = counters_.probe_cpu;
  publication_.store(std::move(snap));
  // The previous snapshot was released in store(), outside the lock; that
  // is probe work as well, counted in the next snapshot.
  const Duration done = clock_.thread_cpu();
  counters_.probe_cpu += done - built;
  return done;
}

}  // namespace memcg
