#include "plugin/cgroup_reader.h"


#include <algorithm>
#include <cstring>

#include "plugin/cache/rates.h"  // the probe's memory.current rate
#include "plugin/cgroupfs/kept_file.h"
#include "plugin/cgroupfs/oomd_xattr.h"
#include "base/parse/cgroup_stat.h"
#include "base/parse/psi.h"
#include "base/parse/single_value.h"

namespace memcg {
namespace {

// The same bytes read (`a`) as before (`b`): a quiet probe's test.
bool same_text(const ValueText& a, const ValueText& b) noexcept {
  return a.len >= 0 && a.len == b.len && std::memcmp(a.text.data(), b.text.data(), static_cast<size_t>(a.len)) == 0;
}

// memory.events counters whose movement is worth an immediate memory.stat
// read: the cgroup hit its high or max limit, or the OOM killer ran. "low"
// (reclaimed despite protection) is left to the threshold.
constexpr parse::EventKey kNotableEvents[] = {parse::ev_high, parse::ev_max, parse::ev_oom, parse::ev_oom_kill,
                                              parse::ev_oom_group_kill};

// ... and those an event wake-up publishes at once: the OOM killer ran.
constexpr parse::EventKey kKillEvents[] = {parse::ev_oom, parse::ev_oom_kill, parse::ev_oom_group_kill};

bool any_kills(const parse::EventValues& v) noexcept {
  return std::any_of(std::begin(kKillEvents), std::end(kKillEvents), [&](parse::EventKey k) { return v.get(k).value_or(0) > 0; });
}

// A kill frees most of a cgroup's memory: the probe that sees usage fall to
// half or less of the previous one (from at least 1 MiB) looks for
// systemd-oomd's record of it, which no kernel event announces.
bool fell_by_half(bool had, uint64_t prev, const std::optional<uint64_t>& now) noexcept {
  return had && now && prev >= (1u << 20) && *now <= prev / 2;
}

int64_t signed_diff(uint64_t cur, uint64_t prev) noexcept {
  return cur >= prev ? static_cast<int64_t>(cur - prev) : -static_cast<int64_t>(prev - cur);
}

}  // namespace

CgroupReader::FileRead CgroupReader::read(const CgroupEntry& e, FileKind kind, std::string& buf, PassReport& report) {
  const CgroupFile& f = cgroup_file(kind);
  const bool held = e.file(kind).valid();
  if (f.access == FileAccess::kept && !held) return {Status::absent, {}};
  ++counters_.file_reads[static_cast<size_t>(kind)];
  const cgroupfs::ReadResult r = held ? cgroupfs::read_kept(io_, e.file(kind).get(), buf)
                                      : cgroupfs::read_once(io_, e.dir.get(), f.name.data(), buf);  // NUL-terminated literals
  if (r.ok()) return {Status::ok, r.value()};
  if (is_gone(r.err())) return {Status::gone, {}};
  ++counters_.read_errors[static_cast<size_t>(kind)];
  report.add_error({"read", cgroup_dir(root_, e.id->path) + "/" + std::string(f.name), r.err()});
  return {Status::failed, {}};
}

CgroupReader::FileRead CgroupReader::read_value(const CgroupEntry& e, FileKind kind, PassReport& report) {
  // The probe's read of every cgroup every pass: the generic path's buffer
  // and result bookkeeping were as many instructions as the system call's
  // own user-space part, and under emulation instructions are the cost.
  read_ahead_one(e, kind, value_ahead_);
  if (value_ahead_.len < 0) return read(e, kind, report);  // says why, with the path
  return {Status::ok, value_ahead_.view()};
}

// memory.pressure into e.probe: false if the cgroup is gone. Not read where
// the PSI gate tells the totals stayed: they are as fresh as a read.
bool CgroupReader::probe_pressure(CgroupEntry& e, TimePoint now, PassReport& report) {
  ProbeValues& p = e.probe;
  if (p.has_psi && psi_gate_.unchanged_since(e.psi_mark)) {
    p.psi_at = now;
    return true;
  }
  const FileRead r = read(e, FileKind::pressure, report);
  if (r.status == Status::gone) return false;
  p.has_psi = r.status == Status::ok;
  p.psi = parse::Psi{};
  p.psi_at = p.has_psi ? now : TimePoint{};
  e.psi_mark = std::nullopt;
  if (p.has_psi) {
    const uint32_t malformed = parse::parse_psi(r.text, p.psi);
    parse_error(FileKind::pressure, malformed);
    if (malformed == 0) e.psi_mark = psi_gate_.mark();
  }
  return true;
}

void CgroupReader::read_ahead_one(const CgroupEntry& e, FileKind kind, Ahead& out) noexcept {
  out.len = -1;
  const sys::UniqueFd& fd = e.file(kind);
  if (fd.valid()) read_fd(fd.get(), kind, out);
}

void CgroupReader::read_ahead_swap(const CgroupEntry& e, bool host_swap, Ahead& out) noexcept {
  if (swap_known_zero(e, host_swap)) out.len = -1;
  else read_ahead_one(e, FileKind::swap_current, out);
}

void CgroupReader::read_ahead(const CgroupEntry& e, bool host_swap, ProbeAhead& out) noexcept {
  read_ahead_one(e, FileKind::current, out.current);
  read_ahead_swap(e, host_swap, out.swap);
}

void CgroupReader::read_ahead(std::span<const CgroupEntry> entries, bool host_swap, std::vector<ProbeAhead>& out) {
  out.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) read_ahead(entries[i], host_swap, out[i]);
}

// Quiet: memory.current read ahead with the same bytes as at the last probe,
// which parsed them; memory.swap.current known to stay 0, absent as before,
// or the same bytes too; no event file flagged or polled every pass, and no
// event read between passes owed to this one. Most cgroups most passes (the
// systemd guest: a sleeping process in most of its 747 leaves).
bool CgroupReader::is_quiet(const CgroupEntry& e, const ProbeAhead& ahead, bool host_swap,
                            const EventFiles& flagged) noexcept {
  if (!e.has_probe || !e.probe.current || !e.events_polled || flagged.events || flagged.swap || flagged.exit ||
      e.events_changed_owed || e.events_notable_owed || !same_text(ahead.current, e.probed_current))
    return false;
  if (swap_known_zero(e, host_swap)) return true;
  if (!e.file(FileKind::swap_current).valid()) return !e.probe.swap;
  return e.probe.swap && same_text(ahead.swap, e.probed_swap);
}

// What probe() would conclude from the same bytes, without parsing them or
// comparing values (about half of a quiet cgroup's probe instructions under
// callgrind, BM_QuietPassPolled): no change, a rate of 0, nothing moved,
// nothing else to read; only the one-minute high needs the pass's bucket.
CgroupReader::Probe CgroupReader::probe_quiet(CgroupEntry& e, TimePoint now) noexcept {
  ++counters_.quiet_probes;
  ProbeValues& p = e.probe;
  Probe out;
  out.delta.valid = true;
  out.quiet = true;
  p.current_rate.reset();
  if (now > p.at) p.current_rate = 0.0;
  p.at = now;
  const auto at = window_at(now);
  e.current_max.observe(at, *p.current);
  p.current_max = e.current_max.max(at);
  return out;
}

CgroupReader::Probe CgroupReader::probe(CgroupEntry& e, const ProbeAhead& ahead, TimePoint now, bool host_swap,
                                        const EventFiles& flagged, PassReport& report) {
  if (is_quiet(e, ahead, host_swap, flagged)) return probe_quiet(e, now);
  Probe out;
  // Updated in place: a quiet cgroup's events and PSI totals stay where they
  // are instead of being copied into a new ProbeValues every pass.
  ProbeValues& p = e.probe;
  const Previous prev = previous(e);
  p.at = now;
  p.current_rate.reset();
  if (!probe_usage(e, ahead, host_swap, now, report)) {
    out.gone = true;
    return out;
  }
  e.probed_current = ahead.current;
  e.probed_swap = ahead.swap;
  // memory.events: every pass, or, when polled, only after the kernel
  // flagged a change (or an event wake-up read it since the last pass).
  const EventFiles which{.events = !e.events_polled || flagged.events, .swap = flagged.swap,
                         .oomd = prev.first || fell_by_half(prev.had_current, prev.current, p.current),
                         .exit = flagged.exit};
  // Most probes read none of them (polled and not flagged): not even the call.
  const EventsRead ev =
      which.events || which.swap || which.oomd || which.exit ? read_events(e, which, now, report) : EventsRead{};
  if (ev.gone) {
    out.gone = true;
    return out;
  }
  out.events_moved = ev.notable || e.events_notable_owed;
  const bool events_changed = ev.changed || e.events_changed_owed;
  e.events_notable_owed = e.events_changed_owed = false;
  // memory.pressure: when the cgroup moved (current, swap or events changed);
  // otherwise the totals are kept and refreshed with a later memory.stat read,
  // so they are never older than limits_max_age.
  const bool moved = prev.first || usage_moved(p, prev) || events_changed;
  if (moved && !probe_pressure(e, now, report)) {
    out.gone = true;
    return out;
  }
  out.moved = moved;
  out.delta = usage_delta(p, prev, now);
  return out;
}

CgroupReader::Previous CgroupReader::previous(const CgroupEntry& e) noexcept {
  const ProbeValues& p = e.probe;
  Previous prev;
  prev.first = !e.has_probe;
  prev.had_current = !prev.first && p.current.has_value();
  prev.had_swap = !prev.first && p.swap.has_value();
  prev.current = prev.had_current ? *p.current : 0;
  prev.swap = prev.had_swap ? *p.swap : 0;
  prev.at = p.at;
  return prev;
}

// memory.current and memory.swap.current into e.probe, and the one-minute
// high; false when the cgroup is gone.
bool CgroupReader::probe_usage(CgroupEntry& e, const ProbeAhead& ahead, bool host_swap, TimePoint now,
                               PassReport& report) {
  ProbeValues& p = e.probe;
  auto single = [&](FileKind kind, const Ahead& a, std::optional<uint64_t>& value) {
    value.reset();
    const FileRead r = a.len >= 0 ? FileRead{Status::ok, a.view()} : read_value(e, kind, report);
    if (r.status == Status::gone) return false;
    if (r.status != Status::ok) return true;
    auto v = parse::parse_single_value(r.text);
    if (!v || v->unlimited) parse_error(kind);
    else value = v->value;
    return true;
  };
  // A swap usage known to stay 0 is not read: on a swapless host (most
  // Kubernetes nodes) an idle probe is one pread. Decided from the entry
  // before anything is written into it, as read_ahead decided.
  const bool skip_swap = swap_known_zero(e, host_swap);
  if (!single(FileKind::current, ahead.current, p.current) ||
      (!skip_swap && !single(FileKind::swap_current, ahead.swap, p.swap)))
    return false;
  p.current_max.reset();
  if (p.current) {
    const auto at = window_at(now);
    e.current_max.observe(at, *p.current);
    p.current_max = e.current_max.max(at);
  }
  return true;
}

bool CgroupReader::usage_moved(const ProbeValues& p, const Previous& prev) noexcept {
  const auto same = [](const std::optional<uint64_t>& now_v, bool had, uint64_t prev_v) {
    return now_v.has_value() == had && (!had || *now_v == prev_v);
  };
  return !same(p.current, prev.had_current, prev.current) || !same(p.swap, prev.had_swap, prev.swap);
}

// The change since the previous probe (and memory.current's rate into p).
cache::ProbeDelta CgroupReader::usage_delta(ProbeValues& p, const Previous& prev, TimePoint now) noexcept {
  cache::ProbeDelta delta;
  if (!prev.had_current || !p.current) return delta;
  delta.valid = true;
  delta.current = signed_diff(*p.current, prev.current);
  if (prev.had_swap && p.swap) delta.swap = signed_diff(*p.swap, prev.swap);
  if (now > prev.at) p.current_rate = cache::gauge_rate(prev.current, *p.current, now - prev.at);
  return delta;
}

// A cgroup's event block being read: the current one, and its successor
// once a file showed a change (a quiet read allocates nothing).
struct CgroupReader::EventsUpdate {
  const MemoryEvents* cur;
  std::shared_ptr<MemoryEvents> next;
  MemoryEvents& change() {
    if (!next) next = cur ? std::make_shared<MemoryEvents>(*cur) : std::make_shared<MemoryEvents>();
    return *next;
  }
};

// memory.events, and memory.events.local when it changed: false if the cgroup is gone.
bool CgroupReader::read_memory_events(const CgroupEntry& e, EventsUpdate& u, EventsRead& out, PassReport& report) {
  const FileRead r = read(e, FileKind::events, report);
  if (r.status == Status::gone) return false;
  if (r.status != Status::ok) return true;
  parse_error(FileKind::events, parse::parse_flat_keyed(r.text, parse::event_key_table(), events_layout_,
                                                        events_scratch_.out()).malformed);
  if (u.cur && events_scratch_ == u.cur->events) return true;
  if (u.cur) {
    for (auto k : kNotableEvents) out.notable = out.notable || events_scratch_.get(k) != u.cur->events.get(k);
    for (auto k : kKillEvents) out.kill = out.kill || events_scratch_.get(k) != u.cur->events.get(k);
  }
  u.change().events = events_scratch_;
  // The kernel raises memory.events.local with memory.events (of this
  // cgroup's own events; an ancestor's changes on a descendant's too).
  // Opened by name where its fd did not fit: ENOENT then means "no such
  // file here" as often as "gone" (memory.events, read above, says which).
  if (const FileRead l = read(e, FileKind::events_local, report); l.status == Status::ok) {
    parse::EventValues local;
    parse_error(FileKind::events_local,
                parse::parse_flat_keyed(l.text, parse::event_key_table(), local_layout_, local.out()).malformed);
    u.next->local = std::move(local);
  }
  return true;
}

void CgroupReader::read_swap_events(const CgroupEntry& e, EventsUpdate& u, PassReport& report) {
  const FileRead r = read(e, FileKind::swap_events, report);  // ENOENT: no swap accounting, as above
  if (r.status != Status::ok) return;
  parse::SwapEventValues swap;
  parse_error(FileKind::swap_events,
              parse::parse_flat_keyed(r.text, parse::swap_event_key_table(), swap_layout_, swap.out()).malformed);
  if (!u.cur || !u.cur->swap || !(swap == *u.cur->swap)) u.change().swap = std::move(swap);
}

void CgroupReader::read_oomd(const CgroupEntry& e, EventsUpdate& u, EventsRead& out, PassReport& report) {
  if (!e.dir.valid()) return;
  const cgroupfs::OomdXattrs x = cgroupfs::read_oomd_xattrs(io_, e.dir.get());
  if (x.error == EINVAL) {
    parse_error(FileKind::events);
  } else if (x.error != 0) {
    ++counters_.read_errors[static_cast<size_t>(FileKind::events)];
    report.add_error({"getxattr user.oomd_*", cgroup_dir(root_, e.id->path), x.error});
  }
  const OomdCounts oomd{x.ooms, x.kills};
  if (oomd == (u.cur ? u.cur->oomd : OomdCounts{})) return;
  out.notable = out.notable || u.cur != nullptr;
  out.kill = out.kill || u.cur != nullptr;
  u.change().oomd = oomd;
}

CgroupReader::EventsRead CgroupReader::read_events(CgroupEntry& e, EventFiles which, TimePoint now,
                                                  PassReport& report) {
  EventsRead out;
  const bool first = !e.has_probe;
  // cgroup.events: its flag is what says to read the others now, and a read
  // is what clears it (the epoll set is level-triggered). Its "populated"
  // says whether the counts read after it are final.
  std::optional<bool> populated;
  if (which.exit) {
    const FileRead r = read(e, FileKind::cgroup_events, report);
    const Status exit = r.status;
    if (exit == Status::gone) return {.gone = true};
    if (exit == Status::ok) {
      populated = parse::parse_populated(r.text);
      if (!populated) parse_error(FileKind::cgroup_events);
    }
    // A flag no read clears would wake the collector every millisecond:
    // the file is closed, which takes it out of the set (read() counted
    // the error; exits are then learnt as without the watch).
    if (exit == Status::failed) {
      e.files[static_cast<size_t>(FileKind::cgroup_events)].reset();
      e.exit_polled = false;
    }
  }
  EventsUpdate u{e.probe.events.get(), nullptr};
  if ((which.events || which.exit || first) && !read_memory_events(e, u, out, report)) return {.gone = true};
  if (populated) e.events_after_exit = !*populated;
  if (which.swap || which.exit || first) read_swap_events(e, u, report);
  if (which.oomd) read_oomd(e, u, out, report);
  if (u.next) {
    u.next->read_at = now;
    e.probe.events = std::move(u.next);
    out.changed = true;
    // A first read that found kills may have found them before the
    // parent's read did; one that found none holds no parent's base back.
    if (out.kill || (!u.cur && any_kills(e.probe.events->events))) e.kills_at = now;
  }
  return out;
}

void CgroupReader::fetch_stats(std::span<const CgroupEntry* const> entries, std::span<Fetched> out,
                               PassReport& report) {
  const size_t n = std::min({entries.size(), out.size(), kStatBatch});
  TimePoint t = clock_.now();
  const Duration c0 = clock_.thread_cpu();
  Duration walls{0};
  for (size_t i = 0; i < n; ++i) {
    const FileRead r = read(*entries[i], FileKind::stat, stat_bufs_[i], report);
    const TimePoint t1 = clock_.now();
    out[i] = {r.status == Status::ok, r.status == Status::gone, r.text, t, t1 - t, Duration{0}};
    walls += t1 - t;
    t = t1;
  }
  if (n == 0) return;
  // The batch's CPU shared out by each read's wall time: the reads run back
  // to back on this thread, so a read's share of the wall is its share of
  // the CPU unless the thread was preempted inside it. Two CPU-clock system
  // calls per batch: one per read made a quiet cgroup's re-read of a regular
  // file 1.04 µs instead of 0.82 (BM_StatReRead/1, against 0.74 bare).
  const Duration batch = clock_.thread_cpu() - c0;
  const double per_wall = walls.count() > 0 ? static_cast<double>(batch.count()) / static_cast<double>(walls.count()) : 0;
  Duration given{0};
  for (size_t i = 0; i + 1 < n; ++i) {
    out[i].cpu = walls.count() > 0 ? Duration{static_cast<Duration::rep>(per_wall * static_cast<double>(out[i].wall.count()))}
                                   : batch / static_cast<Duration::rep>(n);
    given += out[i].cpu;
  }
  out[n - 1].cpu = batch - given;  // the rounding's remainder too: the shares add up to the batch
}

CgroupReader::StatRead CgroupReader::read_stat(const CgroupEntry& e, const cache::CompanionReads& take,
                                              const PassTime& at, PassReport& report) {
  const CgroupEntry* one[1] = {&e};
  Fetched f[1];
  fetch_stats(one, f, report);
  return finish_stat(e, f[0], take, at, report);
}

// A quiet cgroup's memory.stat reads the same, byte for byte, at most of its
// max_age reads: its values are then the last read's, and the digest (~470
// instructions) spares the parse (~5,600). Its malformed lines are counted
// again, as a parse of the same bytes would.
void CgroupReader::take_stat_values(const StatRecord* last, std::string_view text, StatRecord& rec) {
  rec.text_digest = text::digest(text, digest_key_);
  rec.text_len = static_cast<uint32_t>(std::min<size_t>(text.size(), UINT32_MAX));
  if (last && last->text_len && last->text_len == rec.text_len && last->text_digest == rec.text_digest) {
    rec.values = last->values;  // shared, not copied
    rec.malformed = last->malformed;
    ++counters_.stat_unchanged;
  } else {
    rec.malformed = parse::parse_flat_keyed(text, parse::stat_key_table(), stat_layout_, stat_scratch_.out()).malformed;
    rec.values = std::make_shared<const parse::StatValues>(stat_scratch_);
  }
  parse_error(FileKind::stat, rec.malformed);
}

void CgroupReader::read_peak(const CgroupEntry& e, bool take, TimePoint t0, StatRecord& rec, PassReport& report) {
  const StatRecord* prev = e.record.get();
  if (prev) {
    rec.peak = prev->peak;
    rec.peak_at = prev->peak_at;
    rec.peak_reset = prev->peak_reset;
  }
  if (!take) return;
  rec.peak_at = t0;
  const FileRead peak = read_value(e, FileKind::peak, report);
  if (peak.status != Status::ok) return;
  const auto v = parse::parse_single_value(peak.text);
  if (!v || v->unlimited) {
    parse_error(FileKind::peak);
    return;
  }
  // Before the first reset the file shows the kernel's watermark since the
  // cgroup was created; after one, the highest usage since it.
  if (rec.peak_reset) rec.peak_since_last = v->value;
  rec.peak = rec.peak_reset && rec.peak ? std::max(*rec.peak, v->value) : v->value;
  // A reset sets the descriptor's peak to the usage at that moment. When the
  // peak since the last reset is the usage the probe saw, nothing rose above
  // it: a reset would leave the same value, and the next read says the same
  // without one (a quiet cgroup's read is then two system calls, not three).
  const bool level = rec.peak_reset && e.probe.current && *e.probe.current == v->value;
  if (e.peak_resettable && !level) {
    static constexpr char kReset[] = "reset\n";  // any non-empty write resets
    rec.peak_reset = io_.pwrite(e.file(FileKind::peak).get(), kReset, sizeof kReset - 1, 0) > 0;
  }
}

CgroupReader::StatRead CgroupReader::finish_stat(const CgroupEntry& e, const Fetched& f,
                                                const cache::CompanionReads& take, const PassTime& at,
                                                PassReport& report) {
  StatRead out;
  const TimePoint t0 = f.at;
  out.gone = f.gone;
  if (!f.ok) return out;  // an error keeps the old values and the pending change
  auto rec = std::make_shared<StatRecord>();
  rec->read_at = t0;
  rec->read_at_wall = at.wall + std::chrono::duration_cast<WallTime::duration>(t0 - at.now);
  take_stat_values(e.record.get(), f.text, *rec);
  if (e.record && t0 > e.record->read_at) {
    rec->prev_values = e.record->values;
    rec->since_prev = t0 - e.record->read_at;
  }
  // Limits: rarely changing, so read only when the collector asks (at most
  // every limits_max_age), from kept fds where the fd budget had room for
  // them, else opened and closed (kept_if_room in cgroup_files.h).
  if (take.limits || !e.record) {
    rec->limits_read_at = t0;
    for (size_t k = 0; k < lim_count; ++k) {
      const FileRead lr = read_value(e, kLimitFiles[k], report);
      if (lr.status != Status::ok) continue;
      rec->limits[k] = parse::parse_single_value(lr.text);
      if (!rec->limits[k]) parse_error(kLimitFiles[k]);
    }
  } else {
    rec->limits = e.record->limits;
    rec->limits_read_at = e.record->limits_read_at;
  }
  // PSI totals of a cgroup the probes saw quiet (they read it when it moves),
  // unless the PSI gate tells they stayed.
  out.psi = e.probe.psi;
  out.psi_mark = e.psi_mark;
  if (take.pressure && e.probe.has_psi && psi_gate_.unchanged_since(e.psi_mark)) {
    out.psi_read = true;
  } else if (take.pressure) {
    if (const FileRead pr2 = read(e, FileKind::pressure, report); pr2.status == Status::ok) {
      out.psi = parse::Psi{};
      const uint32_t malformed = parse::parse_psi(pr2.text, out.psi);
      parse_error(FileKind::pressure, malformed);
      out.psi_read = true;
      out.psi_mark = malformed == 0 ? psi_gate_.mark() : std::nullopt;
    }
  }
  read_peak(e, take.peak || !e.record, t0, *rec, report);
  out.record = std::move(rec);
  out.wall = f.wall;
  out.cpu = f.cpu;
  return out;
}

}  // namespace memcg
