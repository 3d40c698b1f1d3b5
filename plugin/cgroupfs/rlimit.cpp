#include "plugin/cgroupfs/rlimit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace memcg::cgroupfs {

FdLimit raise_fd_limit(uint64_t want_hard) noexcept {
  FdLimit out;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    out.err = errno;
    return out;
  }
  if (lim.rlim_max < want_hard) {
    uint64_t nr_open = want_hard;
    if (FILE* f = std::fopen("/proc/sys/fs/nr_open", "re")) {
      unsigned long long v = 0;
      if (std::fscanf(f, "%llu", &v) == 1) nr_open = v;
      std::fclose(f);
    }
    rlimit want{std::min<uint64_t>(want_hard, nr_open), std::min<uint64_t>(want_hard, nr_open)};
    if (want.rlim_max > lim.rlim_max && setrlimit(RLIMIT_NOFILE, &want) == 0) lim = want;  // EPERM: keep what we have
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
