// This process's open descriptors counted with one poll(2), for kernels
// whose /proc/self/fd gives no size (before 6.2). Listing that directory
// makes the kernel instantiate an entry per descriptor (about a microsecond
// each on hardware, ~10 ms for the 12,000 of 1,000 cgroups); poll(2) over
// every slot of the descriptor table, with no events asked and no timeout,
// only looks each one up: a closed slot answers POLLNVAL, an open one its
// file's readiness (nothing waits, nothing is registered). 12,000 regular
// files: 0.09 ms against 3.0 ms listed (the build host, 6.18); a cgroup
// file's readiness costs more (kernfs takes and drops an active reference).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include <poll.h>

#include "base/sys/result.h"

namespace memcg::sys {

// The descriptor table's size ("FDSize:" of /proc/PID/status): no
// descriptor of the process is at or above it. 0 when the text has none.
size_t fd_table_size(std::string_view proc_status) noexcept;

// How many of the slots 0..table_size-1 hold an open descriptor, polled
// through `slots` (kept by the caller between calls: one allocation).
// EINVAL when table_size exceeds RLIMIT_NOFILE's soft limit, ENOMEM when
// the kernel cannot copy the array.
Result<size_t> count_open_descriptors(size_t table_size, std::vector<pollfd>& slots);

}  // namespace memcg::sys
