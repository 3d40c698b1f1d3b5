// The set of collected cgroups: discovery (a breadth-first walk every
// rescan_interval), the kept-open files of each, the parent links the
// pending-change propagation needs, and the epoll set that says which
// memory.events changed. State per cgroup survives rescans as long as the
// cgroup (path and inode) does.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "plugin/cache/window_max.h"
#include "plugin/cgroup_files.h"
#include "plugin/cgroupfs/file_watch.h"
#include "plugin/cgroupfs/event_poller.h"
#include "plugin/cgroupfs/file_io.h"
#include "plugin/cgroupfs/walk.h"
#include "plugin/pass_report.h"
#include "plugin/removed_kills.h"
#include "plugin/snapshot.h"
#include "base/sys/unique_fd.h"

namespace memcg {

// A one-value file's text as the probe last read it ahead (len < 0: none).
struct ValueText {
  int8_t len = -1;
  std::array<char, 23> text;  // "18446744073709551615\n" is 21 bytes
  std::string_view view() const noexcept { return {text.data(), len < 0 ? 0 : static_cast<size_t>(len)}; }
};

// Whether `a` holds the bytes `b` does, for two texts whose bytes past
// their length are zero (the quiet lane's, quiet_lane.h): three word
// compares, no call, no length arithmetic; the lane asks it of most
// cgroups every pass.
inline bool same_zero_tailed(const ValueText& a, const ValueText& b) noexcept {
  static_assert(sizeof(ValueText) == 24);
  uint64_t x[3], y[3];
  std::memcpy(x, &a, sizeof x);
  std::memcpy(y, &b, sizeof y);
  return a.len >= 0 && ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2])) == 0;
}

// `t` with its bytes past its length zeroed, as same_zero_tailed wants.
inline ValueText zero_tailed(ValueText t) noexcept {
  const size_t n = t.len < 0 ? 0 : static_cast<size_t>(t.len);
  std::memset(t.text.data() + n, 0, t.text.size() - n);
  return t;
}

// One collected cgroup: its identity, its open files and its cache state.
struct CgroupEntry {
  std::shared_ptr<const CgroupId> id;
  sys::UniqueFd dir;
  std::array<sys::UniqueFd, kFileKindCount> files;  // the kCgroupFiles that are kept open
  std::shared_ptr<const config::Settings> settings;

  bool has_probe = false;
  // memory.current and memory.swap.current as the last probe read them: the
  // same bytes again are a quiet probe (CgroupReader::probe).
  ValueText probed_current, probed_swap;
  ProbeValues probe;
  cache::WindowMax current_max;  // memory.current as probed, the last minute's highest
  uint64_t pending = 0;
  std::shared_ptr<const StatRecord> record;
  // record->read_at, kept beside the probe: the flush decision of every
  // cgroup every pass otherwise touches every record's memory, and under
  // emulation that cost as much as the probes' own work (perf).
  TimePoint read_at{};
  std::array<uint64_t, cache::kReadReasonCount> reads{};
  uint64_t skips = 0;
  Duration read_wall{0}, read_cpu{0};
  uint64_t max_age_violations = 0;  // passes a due max_age read was deferred past max_age by the budget
  bool first_refresh = true;        // the refresh phase applies until the first read after the initial one
  bool events_polled = false;       // memory.events is in the epoll set: read only when flagged
  bool swap_events_polled = false;  // likewise memory.swap.events (else read with the limits)
  bool exit_polled = false;         // cgroup.events is in the exit set (cgroup_files.h, ReadAt::on_exit)
  // memory.events was read after cgroup.events said "populated 0": its
  // counts are final unless a task joins again. A cgroup removed without it
  // may have had its last kill counted only in its parent's (removed_kills.h).
  bool events_after_exit = false;
  KillLedger kills;  // as a parent: what its children's counts leave unexplained (removed_kills.h)
  TimePoint kills_at{};  // the read that found oom, oom_kill or oom_group_kill changed (or the first, if any)
  // Read between passes by an event wake-up (Collector::run_event_pass):
  // what the next pass's probe would have learnt from reading them itself.
  bool events_changed_owed = false, events_notable_owed = false;
  bool forced = false;
  bool moved_since_peak = true;     // a probe saw usage or events change since memory.peak was read
  // memory.peak is open for writing: each read is followed by a reset of the
  // peak seen through this descriptor (6.12+, CgroupTable::set_peak_reset).
  bool peak_resettable = false;
  // The limit files' inotify watches (cgroupfs/file_watch.h), set at the
  // cgroup's first periodic limits read (limits_watch_tried): a cgroup gone
  // sooner never pays for them. While every limit file the cgroup has is
  // watched (limits_watched), its limits are not re-read every
  // limits_max_age: only once one was written (limits_owed), or when a read
  // takes everything along.
  std::array<cgroupfs::Watch, lim_count> limit_watches;
  bool limits_watch_tried = false, limits_watched = false;
  bool limits_owed = false;
  // systemd-oomd's record (the directory's xattrs): read every limits_max_age.
  std::optional<TimePoint> oomd_at;
  // The root's PSI "some" total when this cgroup's memory.pressure was last
  // read (cache/psi_gate.h): while the root's is the same, so are its totals.
  std::optional<uint64_t> psi_mark;
  bool gone = false;

  const sys::UniqueFd& file(FileKind k) const noexcept { return files[static_cast<size_t>(k)]; }
};

class CgroupTable {
 public:
  CgroupTable();
  ~CgroupTable();
  CgroupTable(const CgroupTable&) = delete;
  CgroupTable& operator=(const CgroupTable&) = delete;

  // Walks `root` as `config` says: new cgroups are opened (their kept files;
  // one that cannot be opened now is left for the next rescan and its error
  // reported), vanished ones dropped, the rest keep their state; every cgroup
  // gets the settings of its rule. An unreadable root changes nothing.
  //
  // The collected set is stable under fd pressure: a cgroup is dropped only
  // when it is gone (ENOENT/ENODEV), never because the walk or an open hit
  // EMFILE, ENFILE or ENOMEM; what the walk could not see is kept as it was.
  // New cgroups are added shallowest first while the fd budget has room for
  // kMinFdsPerCgroup more (limit files kept by others are closed to make
  // that room; a cgroup keeps its own only while there is room for
  // kMaxFdsPerCgroup); the rest are left out (counted by reason) and
  // tried again at every rescan, so they come in as room frees up.
  void rescan(const std::string& root, const config::Config& config, PassReport& report, Counters& counters);
  // Descriptors the table may hold (directories and kept files); unlimited
  // by default. The daemon derives one budget from RLIMIT_NOFILE (rlimit.h)
  // and one from its own memory limit (own_memory.h); the lower one holds,
  // and cgroups left out for want of room count under its reason.
  void set_fd_budget(uint64_t max_fds) noexcept { rlimit_fds_ = max_fds; }
  void set_memory_fd_budget(uint64_t max_fds) noexcept { memory_fds_ = max_fds; }
  // The kernel resets memory.peak per open file (6.12+): cgroups opened
  // from now on get it for reading and writing where they may, so that the
  // one-minute high sees the peak between two reads.
  void set_peak_reset(bool on) noexcept { peak_reset_ = on; }
  // The reads a rescan makes instead of walking go through `io` (tests fail them).
  void set_io(cgroupfs::FileIo& io) noexcept { io_ = &io; }
  // Which polled event files the kernel flagged since the last call: true
  // when any was.
  bool poll_events();
  // Whether the kernel flagged `kind` (FileKind::events, swap_events or
  // cgroup_events) of `e`.
  bool flagged(const CgroupEntry& e, FileKind kind) const noexcept;
  // Whether the last poll_events found any file flagged: most passes none
  // is, and the probe then asks no cgroup's three files one by one.
  bool any_flagged() const noexcept { return any_ready_; }
  // The epoll set of every polled event file: readable when the kernel
  // flagged one (the daemon waits on it between passes), -1 if none.
  int events_fd() const noexcept { return poller_->fd(); }
  // The set of the cgroup.events files: readable when a cgroup's last task
  // exited (or it froze or thawed). A set of its own, so that the daemon
  // can wake for an exit within a millisecond, not after the spacing that
  // bounds wake-ups for memory.events (a cgroup held at its limit flags
  // that every 10 ms).
  int exits_fd() const noexcept { return exit_poller_->fd(); }
  // Marks limits_owed on the cgroups with a limit file written since the
  // last call (all watched ones after a queue overflow); a cgroup one of
  // whose watches the kernel dropped is watched no more.
  void take_watch_events();
  // Watches `e`'s limit files (once; the collector calls it just before the
  // first periodic read of them, so that a write after that read is seen).
  void watch_limits(const std::string& root, CgroupEntry& e) noexcept;
  // Collected cgroups whose limit files could not be watched (their limits
  // are read every limits_max_age), and the errno of the last watch refused.
  uint64_t unwatched() const noexcept { return unwatched_; }
  int watch_error() const noexcept { return watch_error_; }
  // Tests flag files by hand (event_poller.h); before the first rescan.
  void set_event_poller(std::unique_ptr<cgroupfs::EventPoller> poller);
  void set_exit_poller(std::unique_ptr<cgroupfs::EventPoller> poller);
  // Drops the cgroups found gone during the pass.
  void erase_gone(PassReport& report);
  // The cgroups dropped since the last call (gone, or not found by a walk),
  // with their last values: the collector keeps their counters a while.
  std::vector<CgroupEntry> take_departed() noexcept { return std::exchange(departed_, {}); }
  // A cgroup went away in a pass whose rescan skipped the walk: walk at the
  // next pass rather than at the next rescan_interval.
  bool walk_owed() const noexcept { return walk_owed_; }

  std::vector<CgroupEntry>& entries() noexcept { return entries_; }
  const std::vector<CgroupEntry>& entries() const noexcept { return entries_; }
  const std::vector<int>& parents() const noexcept { return parents_; }  // index of the parent, -1 for none
  bool root_ok() const noexcept { return root_ok_; }
  uint64_t limited() const noexcept { return limited_; }
  uint64_t no_memory() const noexcept { return no_memory_; }
  uint64_t open_fds() const noexcept { return open_fds_; }
  uint64_t fd_budget() const noexcept { return std::min(rlimit_fds_, memory_fds_); }
  const LeftOut& left_out() const noexcept { return left_out_; }
  // Changes whenever the set of entries, their order or their settings do.
  uint64_t generation() const noexcept { return generation_; }

 private:
  void link_parents();
  // rescan's parts (cgroup_table.cpp has the shortcuts and their invariants).
  struct Reconciled {
    std::vector<CgroupEntry> next;  // the collected set being built
    std::vector<size_t> fresh;      // found.cgroups indexes not collected yet
    size_t kept_in_order = 0;       // entries kept in the walk's order (next's prefix)
  };
  bool is_settled(const config::Config& config) const;
  bool walk_can_be_skipped(bool settled);
  cgroupfs::WalkResult walk(const std::string& root, const config::Config& config, bool settled, PassReport& report);
  Reconciled reconcile(const cgroupfs::WalkResult& found, PassReport& report);
  void admit(const std::string& root, cgroupfs::WalkResult& found, Reconciled& r, PassReport& report,
             Counters& counters);
  void register_events(CgroupEntry& e) noexcept;
  void count_unwatched() noexcept;
  // Adds a kept event file to the epoll set: false where it cannot be polled
  // (regular files of fixture trees: EPERM), which is then read every pass.
  bool watch(const sys::UniqueFd& fd) noexcept;
  // The root's live descendants (cgroup.stat), or nullopt if unreadable.
  std::optional<uint64_t> read_descendants() noexcept;
  // The directories without the controller and their subtrees, or nullopt
  // if one of them cannot be vouched for (walk_skip.h).
  std::optional<uint64_t> vouch_uncollected() noexcept;
  // After a walk: the directories it found without the controller, with
  // their cgroup.stat and cgroup.controllers kept open.
  void watch_uncollected(const std::string& root);
  std::optional<uint64_t> read_count(sys::UniqueFd& fd) noexcept;
  // A new cgroup while it is opened: its entry, and the errno of the first
  // open that failed for a reason other than a missing file.
  struct Opening {
    CgroupEntry e;
    int err = 0;
  };
  // Where admission stands within a rescan's fresh cgroups.
  struct Admission {
    size_t next = 0;              // the next fresh cgroup to try
    size_t shed_from = SIZE_MAX;  // r.next entries below it may still shed kept_if_room fds
    bool exhausted = false;       // the kernel refused a descriptor: the rest wait for the next rescan
  };
  std::vector<Opening> open_directories(const std::string& root, cgroupfs::WalkResult& found, Reconciled& r,
                                        Admission& a, PassReport& report);
  // Opens a new cgroup's directory into `e`: 0, or the errno that failed.
  int open_directory(const std::string& root, cgroupfs::Found& f, CgroupEntry& e, PassReport& report);
  // One kind of kept file across the batch (cgroup_table.cpp says why).
  void open_kind(const std::string& root, const CgroupFile& file, std::vector<Opening>& batch, PassReport& report,
                 Counters& counters);
  void commit(std::vector<Opening>& batch, Reconciled& r, PassReport& report, bool extras);
  bool open_peak_for_reset(CgroupEntry& e);
  // Closes the kept_if_room files `e` keeps: the descriptors freed.
  static size_t close_kept_if_room(CgroupEntry& e) noexcept;

  // Before the entries: their watches are removed through it.
  cgroupfs::WatchSet watcher_;
  cgroupfs::WatchEvents watch_events_;
  uint64_t unwatched_ = 0;
  int watch_error_ = 0;
  cgroupfs::Walker walker_;           // remembers listings: rescans list only changed directories
  uint64_t generation_ = 0;
  std::vector<CgroupEntry> entries_;  // pre-order by path
  std::vector<CgroupEntry> departed_;  // dropped, not yet taken
  std::vector<int> parents_;
  bool root_ok_ = true;
  uint64_t limited_ = 0, no_memory_ = 0;
  uint64_t open_fds_ = 0;
  uint64_t rlimit_fds_ = UINT64_MAX, memory_fds_ = UINT64_MAX;  // fd_budget() is the lower
  bool peak_reset_ = false;
  LeftOut left_out_;
  // The rules the entries' settings came from, and how many cgroups the last
  // reconciled walk found: a walk with the same result under the same rules
  // leaves the table as it is.
  std::vector<std::shared_ptr<const config::Settings>> settings_from_;
  size_t last_walk_cgroups_ = SIZE_MAX;
  // The walk's shortcut (walk_skip.h): the root's cgroup.stat kept open, and
  // whether the last walk saw the whole tree.
  sys::UniqueFd root_stat_;
  bool last_walk_complete_ = false;
  uint64_t skipped_in_a_row_ = 0;
  bool walk_owed_ = false;
  struct Watched {
    std::string path;
    sys::UniqueFd stat, controllers;
  };
  std::vector<Watched> watched_;
  cgroupfs::FileIo* io_ = &cgroupfs::FileIo::system();
  std::string scratch_;  // read_kept's buffer for the cgroup.stat and cgroup.controllers reads
  std::unique_ptr<cgroupfs::EventPoller> poller_;  // the kept event files, flagged by the kernel on change
  std::unique_ptr<cgroupfs::EventPoller> exit_poller_;  // the kept cgroup.events files
  std::vector<unsigned char> ready_;  // by fd: flagged at the last poll_events
  bool any_ready_ = false;            // some byte of ready_ is set
  std::vector<int> flagged_;
};

// The directory of a cgroup path under root ("/" is the root itself).
std::string cgroup_dir(const std::string& root, const std::string& path);

}  // namespace memcg
