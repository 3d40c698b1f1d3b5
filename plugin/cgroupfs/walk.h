// Discovery: walk the cgroup2 tree breadth-first from the root down to
// max_depth, keeping the cgroups that have the memory controller and pass the
// include/exclude globs, up to max_cgroups (breadth-first, so a cap drops the
// deepest cgroups first and never a parent while keeping its children).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "plugin/cgroupfs/kept_file.h"
#include "plugin/error.h"

namespace memcg::cgroupfs {

struct Found {
  std::string path;  // relative to the root; "/" is the root itself
  int depth = 0;
  uint64_t inode = 0;
  UniqueFd dir;      // open directory, handed to the table for new cgroups
};

struct WalkResult {
  std::vector<Found> cgroups;    // pre-order: each parent before its descendants
  uint64_t limited = 0;          // matched, but over max_cgroups
  uint64_t no_memory = 0;        // directories without memory.stat (not descended)
  std::vector<IoError> errors;   // directories that exist but could not be read
  bool root_ok = true;           // false: the root itself could not be opened
};

WalkResult walk(const std::string& root, const config::CollectorConfig& cfg);

// Orders cgroup paths so that every parent sorts before its descendants and a
// subtree is contiguous ('/' sorts before every other character; "/" first).
bool path_before(std::string_view a, std::string_view b) noexcept;

}  // namespace memcg::cgroupfs
