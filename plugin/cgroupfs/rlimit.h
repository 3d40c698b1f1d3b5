// Kept-open files need one fd per file per cgroup (up to 6 at 10k cgroups is
// 60k), well past the usual soft limit of 1024.
#pragma once

#include <cstdint>

namespace memcg::cgroupfs {

struct FdLimit {
  uint64_t soft = 0, hard = 0;
  int err = 0;  // setrlimit's errno if raising failed (the limits are then unchanged)
};

// Raises the soft RLIMIT_NOFILE to the hard limit, and, where the process may
// (CAP_SYS_RESOURCE), the hard limit first to `want_hard` (capped by
// /proc/sys/fs/nr_open). Without the capability the hard limit stays as set
// by the service manager (the unit's LimitNOFILE=).
FdLimit raise_fd_limit(uint64_t want_hard = 262144) noexcept;

}  // namespace memcg::cgroupfs
