#include "plugin/cgroupfs/dir_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>

namespace memcg::cgroupfs {
namespace {

// IN_MASK_CREATE: a second handle on one inode would share its watch
// descriptor, and the first to go would remove the other's watch.
constexpr uint32_t kMask = IN_MODIFY | IN_ATTRIB | IN_MOVED_TO | IN_ONLYDIR | IN_MASK_CREATE;
constexpr size_t kBufSize = 64 * 1024;

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

DirWatch& DirWatch::operator=(DirWatch&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    wd_ = o.wd_;
    o.wd_ = -1;
  }
  return *this;
}

void DirWatch::reset() noexcept {
  if (wd_ >= 0 && owner_) owner_->remove(wd_);
  wd_ = -1;
}

DirWatcher::DirWatcher() noexcept {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) error_ = errno;
  fd_.reset(fd);
}

DirWatch DirWatcher::add(FileIo& io, int dirfd, const std::string& path, int& err) noexcept {
  err = 0;
  if (!fd_.valid()) {
    err = error_;
    return {};
  }
  std::array<char, 32> held{};
  std::snprintf(held.data(), held.size(), "/proc/self/fd/%d", dirfd);
  int wd = io.add_watch(fd_.get(), held.data(), kMask);
  if (wd < 0 && errno == ENOENT) wd = io.add_watch(fd_.get(), path.c_str(), kMask);
  if (wd < 0) {
    err = errno != 0 ? errno : EIO;
    return {};
  }
  return DirWatch(this, wd);
}

void DirWatcher::remove(int wd) noexcept {
  // EINVAL when the kernel dropped it already (IN_IGNORED not drained yet).
  if (fd_.valid()) ::inotify_rm_watch(fd_.get(), wd);
}

bool DirWatcher::names_a_limit(std::string_view name) noexcept {
  return name == "memory.max" || name == "memory.high" || name == "memory.low" || name == "memory.min" ||
         name == "memory.swap.max" || name == "memory.swap.events";
}

void DirWatcher::drain(WatchEvents& out) noexcept {
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
      const std::string_view name(buf_.data() + at + sizeof ev, ::strnlen(buf_.data() + at + sizeof ev, ev.len));
      at += sizeof ev + ev.len;
      if (ev.mask & IN_Q_OVERFLOW) out.overflow = true;
      else if (ev.mask & IN_IGNORED) out.lost.push_back(ev.wd);
      else if ((ev.mask & IN_ATTRIB) && ev.len == 0) out.changed.push_back(ev.wd);  // the directory's own xattrs
      else if ((ev.mask & (IN_MODIFY | IN_MOVED_TO)) && names_a_limit(name)) out.changed.push_back(ev.wd);
    }
  }
  sort_unique(out.changed);
  sort_unique(out.lost);
}

}  // namespace memcg::cgroupfs
