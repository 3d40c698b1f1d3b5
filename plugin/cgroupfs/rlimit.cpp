#include "plugin/cgroupfs/rlimit.h"

#include <sys/resource.h>

#include <cerrno>

namespace memcg::cgroupfs {

FdLimit raise_fd_limit() noexcept {
  FdLimit out;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    out.err = errno;
    return out;
  }
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit want = lim;
    want.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0)
      lim = want;
    else
      out.err = errno;
  }
  out.soft = lim.rlim_cur;
  out.hard = lim.rlim_max;
  return out;
}

}  // namespace memcg::cgroupfs
