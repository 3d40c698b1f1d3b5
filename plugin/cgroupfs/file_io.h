// The system calls the per-tick path makes, behind a seam: production uses
// pread(2) and sysinfo(2); tests substitute failures (EIO, EACCES, ENODEV) and
// host facts (swap on or off) that a fixture tree of regular files cannot
// produce by itself.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace memcg::cgroupfs {

class FileIo {
 public:
  virtual ~FileIo() = default;
  // Same contract as pread(2): bytes read, or -1 with errno set.
  virtual ssize_t pread(int fd, char* buf, size_t len, off_t offset) noexcept = 0;
  // Whether the host has any swap space now (sysinfo's totalswap > 0; swap
  // devices, swap files and zram alike). Asked once per pass.
  virtual bool host_has_swap() noexcept = 0;
  // Same contracts as flistxattr(2) and fgetxattr(2): the cgroup directory's
  // extended attributes, where systemd-oomd records its kills.
  virtual ssize_t flistxattr(int fd, char* list, size_t size) noexcept;
  virtual ssize_t fgetxattr(int fd, const char* name, void* value, size_t size) noexcept;
  // Same contract as pwrite(2): memory.peak's reset (6.12+) is a write.
  virtual ssize_t pwrite(int fd, const char* buf, size_t len, off_t offset) noexcept;
  // Same contract as inotify_add_watch(2): a limit file's watch
  // (file_watch.h); tests fail it as a full fs.inotify.max_user_watches would.
  virtual int add_watch(int inotify_fd, const char* path, uint32_t mask) noexcept;

  static FileIo& system() noexcept;
};

}  // namespace memcg::cgroupfs
