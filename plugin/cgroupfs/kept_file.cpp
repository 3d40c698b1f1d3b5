#include "plugin/cgroupfs/kept_file.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

#include "base/sys/pread.h"

namespace memcg::cgroupfs {
namespace {

class SystemIo final : public FileIo {
 public:
  // The system call itself (base/sys/pread.h): glibc's pread(3) is a
  // thread-cancellation point and, in a multi-threaded process, switches
  // asynchronous cancellation on and off around every call (about 90
  // instructions, as many as the rest of a quiet probe's user-space work on
  // its memory.current read). The daemon never cancels threads.
  ssize_t pread(int fd, char* buf, size_t len, off_t offset) noexcept override {
    return sys::pread_direct(fd, buf, len, offset);
  }
  bool host_has_swap() noexcept override {
    struct sysinfo si {};
    return ::sysinfo(&si) != 0 || si.totalswap > 0;  // unknown: assume swap, read the files
  }
};

constexpr size_t kInitialBuffer = 8192;   // memory.stat on 6.x is ~1.5 KiB
constexpr size_t kMaxBuffer = 1u << 20;    // no cgroup file is this large

}  // namespace

ssize_t FileIo::flistxattr(int fd, char* list, size_t size) noexcept { return ::flistxattr(fd, list, size); }
ssize_t FileIo::fgetxattr(int fd, const char* name, void* value, size_t size) noexcept {
  return ::fgetxattr(fd, name, value, size);
}

ssize_t FileIo::pwrite(int fd, const char* buf, size_t len, off_t offset) noexcept {
  ssize_t n;
  do n = ::pwrite(fd, buf, len, offset);
  while (n < 0 && errno == EINTR);
  return n;
}

int FileIo::add_watch(int inotify_fd, const char* path, uint32_t mask) noexcept {
  return ::inotify_add_watch(inotify_fd, path, mask);
}

FileIo& FileIo::system() noexcept {
  static SystemIo io;
  return io;
}

sys::Result<UniqueFd> open_at(int dirfd, const char* name, int access) {
  int fd;
  do fd = ::openat(dirfd, name, access | O_CLOEXEC | O_NOCTTY);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return sys::Result<UniqueFd>::failure(errno);
  return UniqueFd(fd);
}

ReadResult read_kept(FileIo& io, int fd, std::string& buf) noexcept {
  if (buf.size() < kInitialBuffer) buf.resize(kInitialBuffer);
  for (;;) {
    const ssize_t n = io.pread(fd, buf.data(), buf.size(), 0);
    if (n < 0) return ReadResult::failure(errno != 0 ? errno : EIO);
    const auto len = static_cast<size_t>(n);
    // A full buffer may mean a truncated read: grow and read again from 0.
    if (len < buf.size() || buf.size() >= kMaxBuffer) return std::string_view(buf.data(), len);
    buf.resize(buf.size() * 2);
  }
}

ReadResult read_once(FileIo& io, int dirfd, const char* name, std::string& buf) noexcept {
  auto fd = open_at(dirfd, name);
  if (!fd.ok()) return ReadResult::failure(fd.err());
  return read_kept(io, fd.value().get(), buf);
}

}  // namespace memcg::cgroupfs
