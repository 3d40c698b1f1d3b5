// Reading one cgroup: the probe (the cheap files, every pass, written into
// the entry's probe values) and the memory.stat read (with the files that
// share its freshness, returned as a record the collector decides to keep). Owns the buffers,
// parser layouts and scratch that make the steady state allocation-free, and
// the one helper that reads any file of the table (cgroup_files.h): the
// bytes, or "absent here", or "the cgroup is gone" (ENOENT/ENODEV), or an
// error that it counts by file and reports with path and errno.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "plugin/cache/companion_reads.h"
#include "plugin/cache/pending.h"
#include "plugin/cache/psi_gate.h"
#include "plugin/cgroup_table.h"
#include "plugin/cgroupfs/file_io.h"
#include "plugin/clock.h"
#include "base/parse/event_keys.h"
#include "base/parse/flat_keyed.h"
#include "base/parse/stat_keys.h"
#include "base/sys/pread.h"
#include "base/sys/random_key.h"
#include "base/text/digest.h"
#include "plugin/pass_report.h"

namespace memcg {

class CgroupReader {
 public:
  CgroupReader(const std::string& root, Clock& clock, cgroupfs::FileIo& io, Counters& counters)
      : root_(root),
        clock_(clock),
        io_(io),
        direct_(&io == &cgroupfs::FileIo::system()),
        counters_(counters),
        digest_key_(sys::random_digest_key()) {}

  struct Probe {
    cache::ProbeDelta delta;    // change since the previous probe
    bool events_moved = false;  // a notable memory.events counter moved
    bool moved = false;         // memory.current, swap.current or memory.events changed (or the first probe)
    bool gone = false;          // the cgroup went away: nothing else is valid (e.probe neither)
    bool quiet = false;         // the quiet probe (is_quiet): nothing changed, nothing parsed
  };
  // A one-value file read ahead of the probe: its text, or len < 0 where it
  // was not read ahead (no kept fd, an error, too long to be a value) and
  // the probe reads it itself, reporting what went wrong as it always did.
  using Ahead = ValueText;
  struct ProbeAhead {
    Ahead current, swap;
  };
  // memory.current, and memory.swap.current where the probe will want it, of
  // every entry: one pread each, back to back, before any is looked at. A
  // probe is one system call and a few hundred instructions of bookkeeping;
  // run apart, the loop of system calls and the loop of bookkeeping each
  // keep their own code and data in the caches (in the emulated guests the
  // probe phase measured 5-13 % less, within their noise:
  // docs/performance.md). `out` is resized to the entries, indexed alike.
  void read_ahead(std::span<const CgroupEntry> entries, bool host_swap, std::vector<ProbeAhead>& out);
  // The same for one entry, and one file of `kind` alone through a
  // descriptor the caller holds (the quiet lane's, quiet_lane.h), counted as
  // the probe's; read_lane leaves the bytes past what it read zero.
  void read_ahead(const CgroupEntry& e, bool host_swap, ProbeAhead& out) noexcept;
  // This pass's PSI gate (cache/psi_gate.h): a cgroup's memory.pressure is
  // read only where the gate cannot tell that its totals stayed.
  void set_psi_gate(const cache::PsiGate& gate) noexcept { psi_gate_ = gate; }
  void read_lane(int fd, FileKind kind, Ahead& out) noexcept {
    out = Ahead{};  // zero-tailed, as the lane compares (cgroup_table.h: same_zero_tailed)
    read_fd(fd, kind, out);
  }
  // Without swap space on the host a cgroup's swap usage can only fall
  // (swapoff pulls pages back in) and stays 0 once it got there: the probe
  // (and the quiet lane, quiet_lane.cpp) then reads no memory.swap.current.
  static bool swap_known_zero(const CgroupEntry& e, bool host_swap) noexcept {
    return !host_swap && e.has_probe && e.probe.swap && *e.probe.swap == 0;
  }
  // memory.swap.current alone, where the probe will want it.
  void read_ahead_swap(const CgroupEntry& e, bool host_swap, Ahead& out) noexcept;
  // Reads the cheap files into e.probe, in place (a quiet cgroup's events
  // and PSI totals are not copied every pass); the caller sets has_probe.
  // `ahead`: what read_ahead read for it (a file not read ahead is read here).
  // `host_swap`: the host has swap space (else a swap of 0 stays 0 and is not
  // re-read); `flagged`: the polled event files the kernel flagged
  // (memory.events, memory.swap.events, cgroup.events).
  struct EventFiles;
  Probe probe(CgroupEntry& e, const ProbeAhead& ahead, TimePoint now, bool host_swap, const EventFiles& flagged,
              PassReport& report);

  // The event counters (memory_events.h), into e.probe.events: a new block
  // when one changed, the old one shared otherwise. memory.events when
  // `events` (and memory.events.local when it changed), memory.swap.events
  // when `swap`, systemd-oomd's xattrs when `oomd`; all of them at a
  // cgroup's first probe. `exit`: the kernel flagged cgroup.events (the
  // last task exited): it is read, which clears the flag, and so are
  // memory.events and memory.swap.events, while the cgroup is still there.
  struct EventFiles {
    bool events = false, swap = false, oomd = false, exit = false;
    bool any() const noexcept { return events || swap || oomd || exit; }
  };
  struct EventsRead {
    bool gone = false;
    bool changed = false;  // a counter changed since the last read (or this is the first)
    bool notable = false;  // high, max, oom, oom_kill, oom_group_kill or an oomd kill moved
    bool kill = false;     // oom, oom_kill, oom_group_kill or an oomd kill moved
  };
  EventsRead read_events(CgroupEntry& e, EventFiles which, TimePoint now, PassReport& report);

  // memory.stat of up to kStatBatch cgroups, read back to back: each read
  // timed by the monotonic clock (the vDSO), the batch by two readings of the
  // thread's CPU clock (CLOCK_THREAD_CPUTIME_ID is a system call), shared
  // out to the reads by their wall time. Each text stays valid until the
  // next fetch_stats.
  static constexpr size_t kStatBatch = 32;
  struct Fetched {
    bool ok = false, gone = false;
    std::string_view text;
    TimePoint at{};            // just before the read
    Duration wall{0}, cpu{0};  // the read itself: wall time, and its share of the batch's CPU time
  };
  void fetch_stats(std::span<const CgroupEntry* const> entries, std::span<Fetched> out, PassReport& report);

  struct StatRead {
    std::shared_ptr<const StatRecord> record;  // null: not read (gone, or an error kept the old values)
    bool psi_read = false;                      // memory.pressure read with it (or known unchanged): `psi` is fresh
    parse::Psi psi;
    std::optional<uint64_t> psi_mark;           // the cgroup's PSI gate mark with it (cache/psi_gate.h)
    Duration wall{0}, cpu{0};  // the memory.stat read itself: wall and reading-thread CPU time
    bool gone = false;
  };
  // `at`: the pass's clocks; the record's wall timestamp is derived from
  // them (one wall-clock read per pass, not per read).
  struct PassTime {
    TimePoint now;
    WallTime wall;
  };
  // A fetched memory.stat parsed into a record, with the companions `take`
  // names (the limits, memory.peak, memory.pressure; what is not taken is
  // the previous record's, with the time it was read).
  StatRead finish_stat(const CgroupEntry& e, const Fetched& f, const cache::CompanionReads& take,
                       const PassTime& at, PassReport& report);
  // Both, for one cgroup.
  StatRead read_stat(const CgroupEntry& e, const cache::CompanionReads& take, const PassTime& at,
                     PassReport& report);
  // What probe() does with the bytes of the cgroup's last probe (it was
  // quiet then, and nothing else changed since): no parse, a rate of 0, the
  // one-minute high in the pass's bucket. Also taken by the collector for a
  // quiet lane's cgroup that reads the same bytes in a new bucket or when its
  // max_age read is due (Collector::probe_all).
  Probe probe_quiet(CgroupEntry& e, TimePoint now) noexcept;

 private:
  enum class Status { ok, absent, gone, failed };
  struct FileRead {
    Status status;
    std::string_view text;  // valid until the next read
  };
  FileRead read(const CgroupEntry& e, FileKind kind, PassReport& report) { return read(e, kind, buf_, report); }
  FileRead read(const CgroupEntry& e, FileKind kind, std::string& buf, PassReport& report);
  // A one-value file (memory.current, a limit, memory.peak): on its kept fd,
  // one pread into value_ahead_ and nothing else; else, or when it failed or
  // did not fit, as read() does.
  FileRead read_value(const CgroupEntry& e, FileKind kind, PassReport& report);
  void parse_error(FileKind kind, uint64_t n = 1) noexcept { counters_.parse_errors[static_cast<size_t>(kind)] += n; }
  bool probe_pressure(CgroupEntry& e, TimePoint now, PassReport& report);
  // What the last probe left, as plain numbers (gcc 12 misreads copies of
  // optionals here as possibly uninitialised).
  struct Previous {
    bool first = true, had_current = false, had_swap = false;
    uint64_t current = 0, swap = 0;
    TimePoint at{};
  };
  static Previous previous(const CgroupEntry& e) noexcept;
  // One pread of a kept one-value file into `out` (len < 0: no kept fd, an
  // error, or too long; nothing counted or reported).
  void read_ahead_one(const CgroupEntry& e, FileKind kind, Ahead& out) noexcept;
  // The same, on a descriptor. Inline, and the system call made in place
  // where the reader reads through the system's FileIo (direct_): the
  // probe's one read per cgroup per pass, most of them the quiet lane's.
  void read_fd(int fd, FileKind kind, Ahead& out) noexcept {
    out.len = -1;
    const ssize_t n = direct_ ? sys::pread_direct(fd, out.text.data(), out.text.size(), 0)
                              : io_.pread(fd, out.text.data(), out.text.size(), 0);
    if (n < 0 || static_cast<size_t>(n) >= out.text.size()) return;  // the probe reads it again and says why
    out.len = static_cast<int8_t>(n);
    ++counters_.file_reads[static_cast<size_t>(kind)];
  }
  bool probe_usage(CgroupEntry& e, const ProbeAhead& ahead, bool host_swap, TimePoint now, PassReport& report);
  // A quiet probe (cgroup_reader.cpp): what it must still do, without a parse.
  static bool is_quiet(const CgroupEntry& e, const ProbeAhead& ahead, bool host_swap, const EventFiles& flagged) noexcept;
  static bool usage_moved(const ProbeValues& p, const Previous& prev) noexcept;
  static cache::ProbeDelta usage_delta(ProbeValues& p, const Previous& prev, TimePoint now) noexcept;
  // memory.peak into rec when `take` (else the previous record's), reset
  // after the read where the descriptor allows (CgroupEntry::peak_resettable).
  void read_peak(const CgroupEntry& e, bool take, TimePoint t0, StatRecord& rec, PassReport& report);
  // memory.stat's bytes into rec: its digest, and its values parsed, or the
  // last record's where the bytes are the same.
  void take_stat_values(const StatRecord* last, std::string_view text, StatRecord& rec);
  struct EventsUpdate;
  bool read_memory_events(const CgroupEntry& e, EventsUpdate& u, EventsRead& out, PassReport& report);
  void read_swap_events(const CgroupEntry& e, EventsUpdate& u, PassReport& report);
  void read_oomd(const CgroupEntry& e, EventsUpdate& u, EventsRead& out, PassReport& report);

  const std::string& root_;
  Clock& clock_;
  cgroupfs::FileIo& io_;
  const bool direct_;  // io_ is the system's: its preads are made in place (base/sys/pread.h)
  Counters& counters_;
  // Reused between reads so the steady state allocates nothing per cgroup.
  std::string buf_;
  Ahead value_ahead_;  // read_value's buffer
  std::array<std::string, kStatBatch> stat_bufs_;  // one per memory.stat of a batch
  parse::LayoutCache stat_layout_, events_layout_, local_layout_, swap_layout_;  // one kernel, one key order
  parse::StatValues stat_scratch_;
  // Random per reader, so no cgroup's counters can be chosen to make a
  // changed memory.stat digest as the unchanged one did.
  text::DigestKey digest_key_;
  cache::PsiGate psi_gate_;  // this pass's (set_psi_gate)
  parse::EventValues events_scratch_;
  // The one-minute high's bucket for the pass's time, computed at its first probe.
  cache::WindowMax::At window_at(TimePoint now) noexcept {
    if (now != window_now_) window_at_ = cache::WindowMax::at(window_now_ = now);
    return window_at_;
  }
  TimePoint window_now_{TimePoint::min()};
  cache::WindowMax::At window_at_{};
};

}  // namespace memcg
