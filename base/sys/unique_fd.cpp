#include "base/sys/unique_fd.h"

#include <unistd.h>

namespace memcg::sys {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}

int UniqueFd::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset(int fd) noexcept {
  // close(2) is not retried on EINTR: on Linux the fd is released either way.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace memcg::sys
