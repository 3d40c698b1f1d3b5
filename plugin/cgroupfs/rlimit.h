// Kept-open files need one fd per file per cgroup (up to 6 at 10k cgroups is
// 60k), well past the usual soft limit of 1024.
#pragma once

#include <cstdint>

namespace memcg::cgroupfs {

struct FdLimit {
  uint64_t soft = 0, hard = 0;
  int err = 0;  // setrlimit's errno if raising failed (the limits are then unchanged)
};

// Raises the soft RLIMIT_NOFILE to the hard limit.
FdLimit raise_fd_limit() noexcept;

}  // namespace memcg::cgroupfs
