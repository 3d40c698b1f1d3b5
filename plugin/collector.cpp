#include "plugin/collector.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "plugin/cache/budget.h"
#include "plugin/cache/rates.h"
#include "plugin/cgroupfs/walk.h"
#include "plugin/parse/flat_keyed.h"

namespace memcg {

struct Collector::Entry {
  std::shared_ptr<const CgroupId> id;
  cgroupfs::UniqueFd dir, stat, current, swap, events, pressure;
  std::shared_ptr<const config::Settings> settings;

  bool has_probe = false;
  ProbeValues probe;
  uint64_t pending = 0;
  std::shared_ptr<const StatRecord> record;
  std::array<uint64_t, cache::kReadReasonCount> reads{};
  uint64_t skips = 0;
  Duration read_wall{0}, read_cpu{0};
  uint64_t max_age_violations = 0;  // passes a due max_age read was deferred past max_age by the budget
  bool first_refresh = true;        // the refresh phase applies until the first read after the initial one
  bool events_polled = false;       // memory.events is in the epoll set: read only when flagged
  bool forced = false;
  bool gone = false;
};

namespace {

constexpr const char* kLimitFiles[lim_count] = {"memory.min", "memory.low", "memory.high", "memory.max",
                                                 "memory.swap.max"};
constexpr FileKind kLimitKinds[lim_count] = {FileKind::min, FileKind::low, FileKind::high, FileKind::max,
                                              FileKind::swap_max};

// memory.events counters whose movement is worth an immediate memory.stat
// read: the cgroup hit its high or max limit, or the OOM killer ran. "low"
// (reclaimed despite protection) is left to the threshold.
constexpr parse::EventKey kNotableEvents[] = {parse::ev_high, parse::ev_max, parse::ev_oom, parse::ev_oom_kill,
                                              parse::ev_oom_group_kill};

bool is_ancestor(std::string_view anc, std::string_view path) noexcept {
  if (anc == "/") return path != "/";
  return path.size() > anc.size() && path.starts_with(anc) && path[anc.size()] == '/';
}

int64_t signed_diff(uint64_t cur, uint64_t prev) noexcept {
  return cur >= prev ? static_cast<int64_t>(cur - prev) : -static_cast<int64_t>(prev - cur);
}

}  // namespace

Collector::Collector(std::string root, config::Config config, Clock& clock, cgroupfs::FileIo& io)
    : root_(std::move(root)), config_(std::move(config)), clock_(clock), io_(io),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
  auto empty = std::make_shared<Snapshot>();
  empty->root = root_;
  latest_ = std::move(empty);
}

Collector::~Collector() {
  entries_.clear();  // their fds leave the epoll set as they close, before epoll_ itself
}

void Collector::set_config(config::Config config) {
  if (config.containers.records_dir != config_.containers.records_dir) records_.reset();
  config_ = std::move(config);
  rules_.reset();
  need_rescan_ = true;
}

void Collector::refresh_records(bool rescanned, TimePoint now, PassReport& report) {
  if (config_.containers.records_dir.empty()) return;
  if (!records_) records_ = std::make_unique<runtime::RecordStore>(config_.containers.records_dir);
  std::vector<IoError> errors;
  records_->refresh(rescanned, errors);
  for (auto& e : errors)
    if (report.errors.size() < PassReport::kMaxErrors) report.errors.push_back(std::move(e));
  if (!rescanned) return;
  // A record is created at createRuntime, before its cgroup may be seen; only
  // records missing for two rescans (at least 30 s) are dropped.
  std::unordered_set<std::string> live;
  for (const auto& e : entries_)
    if (!e.id->identity.container_id.empty()) live.insert(e.id->identity.container_id);
  records_->expire(live, now, std::max<Duration>(2 * config_.collector.rescan_interval, std::chrono::seconds(30)));
}

void Collector::request_refresh(config::Glob glob) {
  std::lock_guard lock(refresh_mu_);
  refresh_.push_back(std::move(glob));
}

void Collector::record_error(FileKind file, const Entry& e, int err, PassReport& report) {
  ++read_errors_[static_cast<size_t>(file)];
  if (report.errors.size() < PassReport::kMaxErrors) {
    const std::string dir = e.id->path == "/" ? root_ : root_ + "/" + e.id->path;
    report.errors.push_back({"read", dir + "/" + std::string(file_name(file)), err});
  }
}

void Collector::rescan(PassReport& report) {
  cgroupfs::WalkResult found = cgroupfs::walk(root_, config_.collector);
  report.rescanned = true;
  root_ok_ = found.root_ok;
  limited_ = found.limited;
  no_memory_ = found.no_memory;
  for (auto& err : found.errors)
    if (report.errors.size() < PassReport::kMaxErrors) report.errors.push_back(std::move(err));
  // The root itself cannot be opened (unmounted, permissions changed,
  // renamed): the walk saw nothing, which says nothing about the cgroups. Keep
  // them; their kept-open fds still read (or report them gone one by one).
  if (!found.root_ok) return;

  std::unordered_map<std::string_view, size_t> old_index;
  old_index.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i)
    if (!entries_[i].gone) old_index.emplace(entries_[i].id->path, i);

  std::vector<Entry> next;
  next.reserve(found.cgroups.size());
  size_t kept = 0;
  for (auto& f : found.cgroups) {
    auto it = old_index.find(f.path);
    // Same path and inode: the same cgroup, keep its state. A new inode at the
    // same path is a recreated cgroup: its state (and rates) start over.
    if (it != old_index.end() && entries_[it->second].id->inode == f.inode) {
      next.push_back(std::move(entries_[it->second]));
      ++kept;
    } else {
      Entry e;
      auto identity = runtime::identify(f.path);
      e.id = std::make_shared<const CgroupId>(CgroupId{std::move(f.path), f.inode, f.depth, std::move(identity)});
      e.dir = std::move(f.dir);
      // ENOENT: the file does not exist here (no swap accounting, the root's
      // memory.current) or the cgroup went away since the walk. Anything else
      // (EMFILE above all) is an error the operator must hear about: the
      // cgroup would otherwise be silently missing.
      bool failed = false;
      auto open = [&](const char* name, FileKind kind) {
        int err = 0;
        auto fd = cgroupfs::open_at(e.dir.get(), name, err);
        if (!fd.valid() && !is_gone(err) && !failed) {
          failed = true;
          ++read_errors_[static_cast<size_t>(kind)];
          if (report.errors.size() < PassReport::kMaxErrors)
            report.errors.push_back({"open", (e.id->path == "/" ? root_ : root_ + "/" + e.id->path) + "/" + name, err});
        }
        return fd;
      };
      e.stat = open("memory.stat", FileKind::stat);
      e.current = open("memory.current", FileKind::current);
      e.swap = open("memory.swap.current", FileKind::swap_current);
      e.events = open("memory.events", FileKind::events);
      e.pressure = open("memory.pressure", FileKind::pressure);
      if (!e.stat.valid() || failed) continue;  // gone, or not collectable now: retried at the next rescan
      // The kernel notifies pollers of memory.events on every change
      // (memcg_memory_event -> cgroup_file_notify): with the fd in the epoll
      // set the file is read only when it changed. Regular files (fixture
      // trees) cannot be polled (EPERM) and are read every pass instead.
      if (e.events.valid() && epoll_.valid()) {
        epoll_event ev{};
        ev.events = EPOLLPRI;
        ev.data.fd = e.events.get();
        e.events_polled = ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, e.events.get(), &ev) == 0;
      }
      next.push_back(std::move(e));
      ++report.added;
    }
  }
  report.removed += entries_.size() - kept;
  entries_ = std::move(next);
  for (auto& e : entries_) e.settings = config_.settings_for(e.id->path);
  link_parents();
}

void Collector::link_parents() {
  parents_.assign(entries_.size(), -1);
  std::vector<size_t> stack;
  for (size_t i = 0; i < entries_.size(); ++i) {
    while (!stack.empty() && !is_ancestor(entries_[stack.back()].id->path, entries_[i].id->path)) stack.pop_back();
    parents_[i] = stack.empty() ? -1 : static_cast<int>(stack.back());
    stack.push_back(i);
  }
}

void Collector::probe(Entry& e, TimePoint now, cache::ProbeDelta& delta, bool& events_moved, PassReport& report) {
  ProbeValues p;
  p.at = now;
  delta = {};
  events_moved = false;

  // Returns false when the cgroup is gone.
  auto read_single = [&](const cgroupfs::UniqueFd& fd, FileKind kind, std::optional<uint64_t>& out) {
    if (!fd.valid()) return true;
    auto r = cgroupfs::read_kept(io_, fd.get(), buf_);
    if (!r.ok()) {
      if (is_gone(r.err)) return false;
      record_error(kind, e, r.err, report);
      return true;
    }
    auto v = parse::parse_single_value(r.text);
    if (!v || v->unlimited)
      ++parse_errors_[static_cast<size_t>(kind)];
    else
      out = v->value;
    return true;
  };
  const ProbeValues* prev = e.has_probe ? &e.probe : nullptr;
  // Without swap space on the host a cgroup's swap usage can only fall (swapoff
  // pulls pages back in) and stays 0 once it got there, so that read is skipped:
  // on a swapless host (most Kubernetes nodes) an idle probe is one pread.
  const bool swap_known_zero = !host_swap_ && prev && prev->swap == uint64_t{0};
  if (swap_known_zero) p.swap = uint64_t{0};
  if (!read_single(e.current, FileKind::current, p.current) ||
      (!swap_known_zero && !read_single(e.swap, FileKind::swap_current, p.swap))) {
    e.gone = true;
    return;
  }
  // Reads an optional kept file; false when the cgroup is gone.
  auto read_optional = [&](const cgroupfs::UniqueFd& fd, FileKind kind, auto&& parse) {
    if (!fd.valid()) return true;
    auto r = cgroupfs::read_kept(io_, fd.get(), buf_);
    if (r.ok()) {
      parse_errors_[static_cast<size_t>(kind)] += parse(r.text);
    } else if (is_gone(r.err)) {
      return false;
    } else {
      record_error(kind, e, r.err, report);
    }
    return true;
  };
  // memory.events: every pass, or, when polled, only after the kernel flagged a change.
  const int efd = e.events.get();
  const bool read_events = !prev || !e.events_polled || (efd >= 0 && static_cast<size_t>(efd) < ready_.size() && ready_[static_cast<size_t>(efd)]);
  bool present = true;
  if (read_events) {
    present = read_optional(e.events, FileKind::events, [&](std::string_view text) {
      auto pr = parse::parse_flat_keyed(text, parse::event_key_table(), events_layout_, events_scratch_.out());
      p.has_events = true;
      for (size_t k = 0; k < parse::ev_count; ++k) p.events[k] = events_scratch_.get(k).value_or(0);
      return pr.malformed;
    });
  } else {
    p.has_events = prev->has_events;
    p.events = prev->events;
  }
  // memory.pressure: when the cgroup moved (current, swap or events changed);
  // otherwise the totals are kept and refreshed with the next memory.stat read,
  // so they are never older than max_age.
  const bool moved = !prev || p.current != prev->current || p.swap != prev->swap || p.events != prev->events;
  if (present && moved) {
    present = read_optional(e.pressure, FileKind::pressure, [&](std::string_view text) {
      p.has_psi = true;
      return parse::parse_psi(text, p.psi);
    });
  } else if (prev) {
    p.has_psi = prev->has_psi;
    p.psi = prev->psi;
  }
  if (!present) {
    e.gone = true;
    return;
  }

  if (prev) {
    if (prev->current && p.current) {
      delta.valid = true;
      delta.current = signed_diff(*p.current, *prev->current);
      if (prev->swap && p.swap) delta.swap = signed_diff(*p.swap, *prev->swap);
      if (now > prev->at) p.current_rate = cache::gauge_rate(*prev->current, *p.current, now - prev->at);
    }
    if (prev->has_events && p.has_events)
      for (auto k : kNotableEvents) events_moved = events_moved || p.events[k] != prev->events[k];
  }
  e.probe = p;
  e.has_probe = true;
}

void Collector::read_stat(Entry& e, cache::ReadReason reason, PassReport& report) {
  const TimePoint t0 = clock_.now();
  const Duration c0 = clock_.thread_cpu();
  auto r = cgroupfs::read_kept(io_, e.stat.get(), buf_);
  const Duration c1 = clock_.thread_cpu();
  const TimePoint t1 = clock_.now();
  if (!r.ok()) {
    if (is_gone(r.err))
      e.gone = true;
    else
      record_error(FileKind::stat, e, r.err, report);  // keep the old values and the pending change
    return;
  }
  auto pr = parse::parse_flat_keyed(r.text, parse::stat_key_table(), stat_layout_, stat_scratch_.out());
  parse_errors_[static_cast<size_t>(FileKind::stat)] += pr.malformed;

  auto rec = std::make_shared<StatRecord>();
  rec->read_at = t0;
  rec->read_at_wall = clock_.wall();
  rec->values = stat_scratch_;
  if (e.record && t0 > e.record->read_at) {
    const Duration dt = t0 - e.record->read_at;
    const auto& prev = e.record->values;
    for (size_t k = 0; k < parse::kStatKeyCount; ++k) {
      if (!rec->values.present.test(k) || !prev.present.test(k)) continue;
      switch (parse::stat_kind(k)) {
        case parse::StatKind::events: rec->rate[k] = cache::counter_rate(prev.values[k], rec->values.values[k], dt); break;
        case parse::StatKind::bytes: rec->rate[k] = cache::gauge_rate(prev.values[k], rec->values.values[k], dt); break;
        case parse::StatKind::count: continue;
      }
      rec->has_rate.set(k);
    }
  }
  // Limits and peak: rarely-changing or only meaningful next to the breakdown,
  // so they are read with it rather than kept open (4 fds per cgroup, not 10).
  for (size_t k = 0; k < lim_count; ++k) {
    auto lr = cgroupfs::read_once(io_, e.dir.get(), kLimitFiles[k], buf_);
    if (!lr.ok()) {
      if (!is_gone(lr.err)) record_error(kLimitKinds[k], e, lr.err, report);
      continue;
    }
    rec->limits[k] = parse::parse_single_value(lr.text);
    if (!rec->limits[k]) ++parse_errors_[static_cast<size_t>(kLimitKinds[k])];
  }
  // PSI totals of a quiet cgroup are refreshed here, with the breakdown.
  if (e.pressure.valid()) {
    auto psi = cgroupfs::read_kept(io_, e.pressure.get(), buf_);
    if (psi.ok()) {
      parse_errors_[static_cast<size_t>(FileKind::pressure)] += parse::parse_psi(psi.text, e.probe.psi);
      e.probe.has_psi = true;
    } else if (!is_gone(psi.err)) {
      record_error(FileKind::pressure, e, psi.err, report);
    }
  }
  auto peak = cgroupfs::read_once(io_, e.dir.get(), "memory.peak", buf_);
  if (peak.ok()) {
    auto v = parse::parse_single_value(peak.text);
    if (v && !v->unlimited) rec->peak = v->value; else ++parse_errors_[static_cast<size_t>(FileKind::peak)];
  } else if (!is_gone(peak.err)) {
    record_error(FileKind::peak, e, peak.err, report);
  }

  e.first_refresh = reason == cache::ReadReason::initial;
  e.record = std::move(rec);
  e.pending = 0;
  e.forced = false;
  ++e.reads[static_cast<size_t>(reason)];
  ++reads_[static_cast<size_t>(reason)];
  ++report.reads;
  e.read_wall += t1 - t0;
  e.read_cpu += c1 - c0;
  read_hist_.observe(to_seconds(t1 - t0));
}

void Collector::mark_forced() {
  std::vector<config::Glob> refresh;
  {
    std::lock_guard lock(refresh_mu_);
    refresh.swap(refresh_);
  }
  for (const auto& g : refresh)
    for (auto& e : entries_)
      if (g.matches(e.id->path)) e.forced = true;
}

void Collector::poll_events() {
  std::fill(ready_.begin(), ready_.end(), 0);
  // One bounded call: the set is level-triggered, so a flagged fd stays
  // ready until it is read, and calling again until the result is short would
  // return the same fds forever (kernfs flags every memory.events right after
  // open when events happened since boot). Room for every cgroup; anything
  // not consumed now is still ready next pass.
  if (!epoll_.valid() || entries_.empty()) return;
  epoll_events_.resize(entries_.size());
  const int got = ::epoll_wait(epoll_.get(), epoll_events_.data(), static_cast<int>(epoll_events_.size()), 0);
  for (int i = 0; i < got; ++i) {
    const auto fd = static_cast<size_t>(epoll_events_[static_cast<size_t>(i)].data.fd);
    if (fd >= ready_.size()) ready_.resize(fd + 1024, 0);
    ready_[fd] = 1;
  }
}

void Collector::count_skip(Entry& e, PassReport& report) noexcept {
  ++e.skips;
  ++skips_;
  ++report.skips;
}

PassReport Collector::run_pass() {
  PassReport report;
  const TimePoint now = clock_.now();
  if (need_rescan_ || now - last_rescan_ >= config_.collector.rescan_interval) {
    rescan(report);
    need_rescan_ = false;
    last_rescan_ = now;
  }
  refresh_records(report.rescanned, now, report);
  host_swap_ = io_.host_has_swap();
  mark_forced();
  poll_events();

  const size_t n = entries_.size();
  deltas_.resize(n);
  change_.resize(n);
  scratch_a_.resize(n);
  scratch_b_.resize(n);
  moved_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    bool moved = false;
    probe(entries_[i], now, deltas_[i], moved, report);
    moved_[i] = moved;
  }
  cache::subtree_change(parents_, deltas_, change_, scratch_a_, scratch_b_);

  const Duration lookahead = config_.collector.probe_interval * 3 / 2;
  wanted_.clear();
  for (size_t i = 0; i < n; ++i) {
    Entry& e = entries_[i];
    if (e.gone) continue;
    e.pending += change_[i];
    cache::FlushInput in;
    if (e.record) in.last_read = e.record->read_at;
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
    if (auto reason = cache::decide_flush(in, now)) {
      const double urgency = e.settings->threshold ? static_cast<double>(e.pending) / static_cast<double>(e.settings->threshold) : 1.0;
      wanted_.push_back({static_cast<uint32_t>(i), *reason, urgency, e.record ? now - e.record->read_at : Duration{0}});
    } else {
      count_skip(e, report);
    }
  }
  const double per_second = config_.collector.max_stat_reads_per_second;
  if (per_second <= 0) {
    for (const auto& w : wanted_) read_stat(entries_[w.index], w.reason, report);
  } else {
    // Over budget: the most urgent reads now, the rest served from cache and
    // retried next pass (their pending change and age keep growing, so they rise).
    const uint64_t budget = budget_.take(per_second, config_.collector.probe_interval);
    const auto chosen = cache::choose_reads(wanted_, budget);
    chosen_.assign(n, 0);
    for (const auto& w : chosen) {
      chosen_[w.index] = 1;
      read_stat(entries_[w.index], w.reason, report);
    }
    for (const auto& w : wanted_) {
      if (chosen_[w.index]) continue;
      Entry& e = entries_[w.index];
      count_skip(e, report);
      ++deferred_;
      // Past max_age before the next pass: the bound is broken, and counted.
      if (e.record && now - e.record->read_at + config_.collector.probe_interval > e.settings->max_age) {
        ++e.max_age_violations;
        ++report.max_age_violations;
      }
    }
  }

  const size_t before = entries_.size();
  std::erase_if(entries_, [](const Entry& e) { return e.gone; });
  if (entries_.size() != before) {
    report.removed += before - entries_.size();
    link_parents();
  }
  report.root_ok = root_ok_;
  report.limited = limited_;
  publish(now);
  return report;
}

void Collector::publish(TimePoint started) {
  auto snap = std::make_shared<Snapshot>();
  snap->pass = ++passes_;
  snap->taken_at = started;
  snap->root = root_;
  snap->cgroups.reserve(entries_.size());
  for (const auto& e : entries_) snap->events_polled += e.events_polled ? 1u : 0u;
  for (const auto& e : entries_)
    snap->cgroups.push_back(CgroupView{e.id, e.settings, e.probe, e.record, e.pending, e.reads, e.skips,
                                       e.read_wall, e.read_cpu, e.max_age_violations});
  snap->cgroups_limited = limited_;
  snap->cgroups_no_memory = no_memory_;
  snap->read_errors = read_errors_;
  snap->parse_errors = parse_errors_;
  snap->reads = reads_;
  snap->skips = skips_;
  snap->reads_deferred = deferred_;
  // Built once per configuration and shared by its snapshots: a pass
  // allocates nothing per rule.
  if (!rules_) rules_ = std::make_shared<const std::vector<std::shared_ptr<const config::Settings>>>(config_.resolved());
  snap->rules = rules_;
  snap->stat_read_seconds = read_hist_;
  snap->pass_duration = clock_.now() - started;
  pass_hist_.observe(to_seconds(snap->pass_duration));
  snap->pass_seconds = pass_hist_;
  if (records_) snap->records = records_->records();
  std::shared_ptr<const Snapshot> next = std::move(snap);
  {
    std::lock_guard lock(latest_mu_);
    latest_.swap(next);
  }
  // The previous snapshot (now in next) is released here, outside the lock.
}

}  // namespace memcg
