// pread(2) as the system call itself, inlined where it is made. glibc's
// pread is a thread-cancellation point (asynchronous cancellation switched
// on and off around every call), and syscall(3) is a call through the PLT
// that moves its seven arguments into place; a probe pass makes one of
// these per cgroup, and the daemon cancels no thread. What it saves
// (~45 instructions a read under callgrind) is too little to show in the
// guests' CPU (docs/performance.md); it is kept as the leaner path every
// cgroup takes every pass, at the cost of this one function.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace memcg::sys {

// Same contract as pread(2): bytes read, or -1 with errno set; EINTR retried.
inline ssize_t pread_direct(int fd, char* buf, size_t len, off_t offset) noexcept {
#if defined(__x86_64__)
  long ret;
  do {
    register long r10 __asm__("r10") = offset;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(static_cast<long>(SYS_pread64)), "D"(static_cast<long>(fd)), "S"(buf), "d"(len), "r"(r10)
                     : "rcx", "r11", "memory");
  } while (ret == -EINTR);
  if (ret < 0 && ret > -4096) {
    errno = static_cast<int>(-ret);
    return -1;
  }
  return ret;
#else
  ssize_t n;
  do n = ::syscall(SYS_pread64, fd, buf, len, offset);
  while (n < 0 && errno == EINTR);
  return n;
#endif
}

}  // namespace memcg::sys
