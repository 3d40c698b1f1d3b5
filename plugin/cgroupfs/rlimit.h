// Kept-open files need one fd per file per cgroup (up to 6 at 10k cgroups is
// 60k), well past the usual soft limit of 1024.
#pragma once

#include <cstdint>

namespace memcg::cgroupfs {

struct FdLimit {
  uint64_t soft = 0, hard = 0;
  int err = 0;  // setrlimit's errno if raising failed (the limits are then unchanged)
};

// Raises the soft RLIMIT_NOFILE to the hard limit. The hard limit is the
// operator's (the unit's LimitNOFILE=, a container runtime's default) and the
// daemon plans within it (cgroup_fd_budget); only a tool that must go past it
// passes `want_hard`, raised first where the process may (CAP_SYS_RESOURCE;
// capped by /proc/sys/fs/nr_open).
FdLimit raise_fd_limit(uint64_t want_hard = 0) noexcept;

// Descriptors the daemon needs besides the collected cgroups' and that do not
// grow with the tree: stdio, the journal and notify sockets, epoll, the walk
// (three at most), a with_stat read, hook records, config and TLS files,
// /proc reads of concurrent scrapes. Generous: running short of one of these
// costs more than one cgroup fewer.
inline constexpr uint64_t kBaseFdReserve = 64;

// The descriptors the collected cgroups may hold under `soft_limit` when
// `reserved` are set aside for the rest (0 when nothing is left).
constexpr uint64_t cgroup_fd_budget(uint64_t soft_limit, uint64_t reserved) noexcept {
  return soft_limit > reserved ? soft_limit - reserved : 0;
}

}  // namespace memcg::cgroupfs
