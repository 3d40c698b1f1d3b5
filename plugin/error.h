// Errors from cgroupfs I/O are values: what was attempted, on which path, and
// the errno. Library code returns them; the daemon decides what to log.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

namespace memcg {

struct IoError {
  std::string action;  // "open", "read", "stat", ...
  std::string path;
  int err = 0;

  std::string message() const { return action + " " + path + ": " + std::strerror(err); }
};

// ENOENT/ENODEV on a kept-open cgroup file mean the cgroup was removed: the
// kernel's kernfs returns ENODEV for reads of a deactivated node, ENOENT for a
// lookup under a removed directory. That is churn, not an error.
inline bool is_gone(int err) noexcept { return err == ENOENT || err == ENODEV; }

// The process or the system is out of descriptors or kernel memory: says
// nothing about the cgroup, which must be neither dropped nor reported as
// broken, only left for later.
inline bool is_exhaustion(int err) noexcept { return err == EMFILE || err == ENFILE || err == ENOMEM; }

}  // namespace memcg
