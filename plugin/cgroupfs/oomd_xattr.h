// The kills systemd-oomd recorded on a cgroup: it increments the directory's
// extended attribute user.oomd_ooms before it kills the cgroup's processes
// and user.oomd_kill by the number it killed after (systemd src/oom/
// oomd-util.c, oomd_cgroup_kill; systemd's own unit_check_oom reads them
// back). Values are decimal text. User xattrs of a cgroup directory are
// readable by whoever may read the directory (0755 on a systemd host).
#pragma once

#include <cstdint>
#include <optional>

#include "plugin/cgroupfs/file_io.h"

namespace memcg::cgroupfs {

struct OomdXattrs {
  std::optional<uint64_t> ooms, kills;  // absent: never set (or unreadable)
  int error = 0;  // an errno other than "no such attribute" / "not supported"
};

// One flistxattr, and a get only for the attributes listed: a cgroup oomd
// never acted on costs one system call.
OomdXattrs read_oomd_xattrs(FileIo& io, int dirfd) noexcept;

}  // namespace memcg::cgroupfs
