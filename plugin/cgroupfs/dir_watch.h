// Which cgroup directories had a limit file written or their extended
// attributes set since the last look: one inotify instance, one watch per
// cgroup directory. A write(2) to memory.max reports IN_MODIFY to the
// watchers of its directory (vfs_write -> fsnotify_modify, for kernfs files
// as for any other), and a setxattr(2) on the directory reports IN_ATTRIB
// (fsnotify_xattr): what systemd-oomd does to record its kills. Neither has
// a poll notification of its own, so without this the limits were re-read
// every collector.limits_max_age whether or not anything was written: about
// a tenth of the whole daemon's system calls on a quiet host.
//
// The directory's other notifications come through the same watch (each
// memory.events change, at most every 10 ms per file, cgroup.procs writes)
// and are dropped by name. A queue overflow (fs.inotify.max_queued_events)
// says every watched directory may have changed.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/sys/unique_fd.h"
#include "plugin/cgroupfs/file_io.h"

namespace memcg::cgroupfs {

class DirWatcher;

// One directory's watch; removed when the handle goes (the cgroup left the
// table). Move-only. The DirWatcher that made it must outlive it.
class DirWatch {
 public:
  DirWatch() = default;
  DirWatch(DirWatch&& o) noexcept : owner_(o.owner_), wd_(o.wd_) { o.wd_ = -1; }
  DirWatch& operator=(DirWatch&& o) noexcept;
  DirWatch(const DirWatch&) = delete;
  DirWatch& operator=(const DirWatch&) = delete;
  ~DirWatch() { reset(); }

  bool active() const noexcept { return wd_ >= 0; }
  int wd() const noexcept { return wd_; }
  void reset() noexcept;
  // The kernel dropped the watch (IN_IGNORED): nothing left to remove.
  void forget() noexcept { wd_ = -1; }

 private:
  friend class DirWatcher;
  DirWatch(DirWatcher* owner, int wd) : owner_(owner), wd_(wd) {}
  DirWatcher* owner_ = nullptr;
  int wd_ = -1;
};

// What a drain found, by watch descriptor (each sorted, unique).
struct WatchEvents {
  std::vector<int> changed;  // a limit file written, or the directory's attributes set
  std::vector<int> lost;     // the kernel dropped the watch
  bool overflow = false;     // the queue overflowed: any watched directory may have changed
  int error = 0;             // the read failed with this errno (the events are lost: treat as overflow)
  bool any() const noexcept { return overflow || error != 0 || !changed.empty() || !lost.empty(); }
};

class DirWatcher {
 public:
  // An inotify instance (non-blocking); error() says why there is none.
  DirWatcher() noexcept;
  bool ok() const noexcept { return fd_.valid(); }
  int error() const noexcept { return error_; }

  // Watches the directory open as `dirfd` (through /proc/self/fd, so that it
  // is the inode held and not whatever the path names now; `path` where
  // /proc is not mounted). On failure an inactive handle and `err` set:
  // ENOSPC at fs.inotify.max_user_watches, EEXIST when this instance
  // watches the inode already.
  DirWatch add(FileIo& io, int dirfd, const std::string& path, int& err) noexcept;

  // Reads every queued event into `out` (cleared first), without waiting.
  void drain(WatchEvents& out) noexcept;

  // The names whose IN_MODIFY counts: the limit files, and
  // memory.swap.events, which is read with them where it is not polled.
  static bool names_a_limit(std::string_view name) noexcept;

 private:
  friend class DirWatch;
  void remove(int wd) noexcept;
  sys::UniqueFd fd_;
  int error_ = 0;
  std::vector<char> buf_;
};

}  // namespace memcg::cgroupfs
