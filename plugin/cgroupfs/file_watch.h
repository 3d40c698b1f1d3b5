// Which watched files were written since the last look: one inotify
// instance, one watch per file. A write(2) to a cgroup's memory.max reports
// IN_MODIFY to the file's watchers (vfs_write -> fsnotify_modify, for kernfs
// files as for any other); the limit files have no poll notification of
// their own, so without this they were re-read every
// collector.limits_max_age whether or not anything wrote them.
//
// Files, not their directory: a directory watch marks every entry of the
// directory as having a watched parent, and then each read of any file in
// it, by any process (memory.current every probe, the kubelet's reads),
// takes fsnotify's slow path (a reference on the parent dentry taken and
// dropped, twice per read: 7 % of the collector's samples on 6.1 in the
// systemd guest, and the bare loop 14 % slower). A watch on the file itself
// costs only the reads of that file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/sys/unique_fd.h"
#include "plugin/cgroupfs/file_io.h"

namespace memcg::cgroupfs {

class WatchSet;

// One file's watch; removed when the handle goes. Move-only. The WatchSet
// that made it must outlive it.
class Watch {
 public:
  Watch() = default;
  Watch(Watch&& o) noexcept : owner_(o.owner_), wd_(o.wd_) { o.wd_ = -1; }
  Watch& operator=(Watch&& o) noexcept;
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;
  ~Watch() { reset(); }

  bool active() const noexcept { return wd_ >= 0; }
  int wd() const noexcept { return wd_; }
  void reset() noexcept;
  // The kernel dropped the watch (IN_IGNORED): nothing left to remove.
  void forget() noexcept { wd_ = -1; }

 private:
  friend class WatchSet;
  Watch(WatchSet* owner, int wd) : owner_(owner), wd_(wd) {}
  WatchSet* owner_ = nullptr;
  int wd_ = -1;
};

// What a drain found, by watch descriptor (each sorted, unique).
struct WatchEvents {
  std::vector<int> changed;  // the file was written
  std::vector<int> lost;     // the kernel dropped the watch
  bool overflow = false;     // the queue overflowed: any watched file may have changed
  int error = 0;             // the read failed with this errno (treat as an overflow)
  bool any() const noexcept { return overflow || error != 0 || !changed.empty() || !lost.empty(); }
};

class WatchSet {
 public:
  // An inotify instance (non-blocking); error() says why there is none.
  WatchSet() noexcept;
  bool ok() const noexcept { return fd_.valid(); }
  int error() const noexcept { return error_; }

  // Watches the file `name` of the directory open as `dirfd` (through
  // /proc/self/fd, so that it is the directory held and not whatever its
  // path names now; `dir_path` where /proc is not mounted). On failure an
  // inactive handle and `err` set: ENOENT when there is no such file,
  // ENOSPC at fs.inotify.max_user_watches, EEXIST when this set watches the
  // inode already.
  Watch add(FileIo& io, int dirfd, const std::string& dir_path, const char* name, int& err) noexcept;

  // Reads every queued event into `out` (cleared first), without waiting.
  void drain(WatchEvents& out) noexcept;

 private:
  friend class Watch;
  void remove(int wd) noexcept;
  sys::UniqueFd fd_;
  int error_ = 0;
  std::vector<char> buf_;
};

}  // namespace memcg::cgroupfs
