// Finding and checking the cgroup2 mount.
#pragma once

#include "base/sys/result.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/error.h"

namespace memcg::cgroupfs {

// A cgroup2 mount: the cgroup directory it shows (`root`, as mountinfo's
// fourth field gives it: relative to the reader's cgroup namespace, "/.."
// and below for one outside it) at `mountpoint`.
struct Cgroup2Mount {
  std::string root, mountpoint;
};
// Every cgroup2 mount in a /proc/<pid>/mountinfo text, in its order.
std::vector<Cgroup2Mount> cgroup2_mounts_in_mountinfo(std::string_view mountinfo);

// The mount point of the first cgroup2 filesystem in a /proc/<pid>/mountinfo
// text (octal escapes such as \040 decoded), or nullopt.
std::optional<std::string> find_cgroup2_in_mountinfo(std::string_view mountinfo);

// Reads /proc/self/mountinfo (or `mountinfo_path`) and returns the mount point.
std::optional<std::string> find_cgroup2_mount(const std::string& mountinfo_path = "/proc/self/mountinfo");

// True when `path` is on a cgroup2 filesystem (statfs f_type == CGROUP2_SUPER_MAGIC).
sys::Result<bool> is_cgroup2(const std::string& path);

// True when the memory controller is available at `root` (its cgroup.controllers
// lists "memory"). Fixture trees declare this the same way a kernel does.
bool has_memory_controller(const std::string& root);

}  // namespace memcg::cgroupfs
