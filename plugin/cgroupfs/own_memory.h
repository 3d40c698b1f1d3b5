// The memory limit the kernel holds the daemon itself to. Every collected
// cgroup's kept files cost kernel memory charged to the daemon's own cgroup
// (a page buffer per file read, the files' dentries, inodes and open-file
// structures: ~57 KiB per cgroup in the 6.1 systemd guest, docs/operations.md
// "Sizing: memory"), so a limit too small for the tree OOM-kills the daemon in its
// own cgroup at every start. The daemon sizes its descriptor budget by the
// limit found here, as it does by RLIMIT_NOFILE, and leaves the rest out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/sys/result.h"
#include "plugin/cgroupfs/mount.h"

namespace memcg::cgroupfs {

// The directory of the cgroup a /proc/self/cgroup text names ("0::PATH"),
// under the first mount whose root holds it, and that mount's point; nullopt
// when none shows it (a container without its own cgroup mount, a root
// outside the namespace: "/..").
struct OwnCgroup {
  std::string dir, mountpoint;
};
std::optional<OwnCgroup> own_cgroup_dir(std::string_view proc_self_cgroup, const std::vector<Cgroup2Mount>& mounts);

// The lowest memory.max or memory.high set from `c.dir` up to its mount
// point (both included where they have the files: a container's namespace
// root is its own cgroup), and the file that sets it; nullopt when none is
// set ("max" everywhere, or no such files). A file that exists but cannot
// be read or parsed is an error carrying its path.
struct MemoryLimit {
  uint64_t bytes = 0;
  std::string file;
};
sys::Result<std::optional<MemoryLimit>> lowest_memory_limit(const OwnCgroup& c);

// The same for this process, from /proc/self/cgroup and /proc/self/mountinfo
// (or the files given: tests); ENOENT when no mount shows its cgroup, so that
// "unknown" is not taken for "no limit".
sys::Result<std::optional<MemoryLimit>> own_memory_limit(const std::string& proc_cgroup = "/proc/self/cgroup",
                                                         const std::string& mountinfo = "/proc/self/mountinfo");

// What the daemon needs within its limit besides the collected cgroups'
// descriptors: its resident size (19.7 MiB at 1,019 cgroups in the systemd
// guest, the cgroups' share included; not measured on an empty tree) and a
// scrape under construction, with room.
inline constexpr uint64_t kBaseMemoryReserve = 24u << 20;
// Per descriptor a collected cgroup holds: the ~57 KiB measured per cgroup
// over its nine descriptors (kernel ~50 KiB, the daemon's own share of its
// entry and its values' text ~7 KiB), rounded up for the scrape's body.
inline constexpr uint64_t kMemoryPerFd = 8u << 10;

// The descriptors the collected cgroups may hold within a memory limit of
// `limit_bytes` (0 when the reserve alone does not fit).
constexpr uint64_t memory_fd_budget(uint64_t limit_bytes) noexcept {
  return limit_bytes > kBaseMemoryReserve ? (limit_bytes - kBaseMemoryReserve) / kMemoryPerFd : 0;
}

}  // namespace memcg::cgroupfs
