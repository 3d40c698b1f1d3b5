#include "plugin/cgroupfs/file_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace memcg::cgroupfs {
namespace {

// IN_MASK_CREATE: a second handle on one inode would share its watch
// descriptor, and the first to go would remove the other's watch. Besides
// writes: anything else that may have changed what the file says (its
// attributes, a file renamed over it on a regular filesystem); cgroupfs
// has none of these but a chown.
constexpr uint32_t kChanged = IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
constexpr uint32_t kMask = kChanged | IN_MASK_CREATE;
constexpr size_t kBufSize = 16 * 1024;

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

Watch& Watch::operator=(Watch&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    wd_ = o.wd_;
    o.wd_ = -1;
  }
  return *this;
}

void Watch::reset() noexcept {
  if (wd_ >= 0 && owner_) owner_->remove(wd_);
  wd_ = -1;
}

WatchSet::WatchSet() noexcept {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) error_ = errno;
  fd_.reset(fd);
}

Watch WatchSet::add(FileIo& io, int dirfd, const std::string& dir_path, const char* name, int& err) noexcept {
  err = 0;
  if (!fd_.valid()) {
    err = error_;
    return {};
  }
  char held[64 + 256];
  std::snprintf(held, sizeof held, "/proc/self/fd/%d/%s", dirfd, name);
  int wd = io.add_watch(fd_.get(), held, kMask);
  // /proc/self/fd missing (no /proc) looks like a missing file: the path says which.
  if (wd < 0 && errno == ENOENT) wd = io.add_watch(fd_.get(), (dir_path + "/" + name).c_str(), kMask);
  if (wd < 0) {
    err = errno != 0 ? errno : EIO;
    return {};
  }
  return Watch(this, wd);
}

void WatchSet::remove(int wd) noexcept {
  // EINVAL when the kernel dropped it already (IN_IGNORED not drained yet).
  if (fd_.valid()) ::inotify_rm_watch(fd_.get(), wd);
}

void WatchSet::drain(WatchEvents& out) noexcept {
  out.changed.clear();
  out.lost.clear();
  out.overflow = false;
  out.error = 0;
  if (!fd_.valid()) return;
  if (buf_.size() < kBufSize) buf_.resize(kBufSize);
  for (;;) {
    const ssize_t n = ::read(fd_.get(), buf_.data(), buf_.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) out.error = errno;
      break;
    }
    for (size_t at = 0; at + sizeof(inotify_event) <= static_cast<size_t>(n);) {
      inotify_event ev;
      std::memcpy(&ev, buf_.data() + at, sizeof ev);  // the buffer is not aligned for it
      at += sizeof ev + ev.len;
      if (ev.mask & IN_Q_OVERFLOW) out.overflow = true;
      else if (ev.mask & IN_IGNORED) out.lost.push_back(ev.wd);
      else if (ev.mask & kChanged) out.changed.push_back(ev.wd);
    }
  }
  sort_unique(out.changed);
  sort_unique(out.lost);
}

}  // namespace memcg::cgroupfs
