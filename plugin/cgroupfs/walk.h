// Discovery: walk the cgroup2 tree breadth-first from the root down to
// max_depth, keeping the cgroups that have the memory controller and pass the
// include/exclude globs, up to max_cgroups (breadth-first, so a cap drops the
// deepest cgroups first and never a parent while keeping its children).
//
// The walk holds at most three descriptors at any time (the root, the
// directory being listed and its listing stream), whatever the tree's size:
// it runs when the process may be at its fd limit, and a walk that needed one
// fd per queued directory would fail exactly then. What it could not see (a
// directory it could not open or list for any reason but removal) is reported
// as unknown, so that the caller keeps what it had there instead of taking
// the cgroups for removed.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "plugin/cgroupfs/kept_file.h"
#include "plugin/error.h"

namespace memcg::cgroupfs {

struct Found {
  std::string path;  // relative to the root; "/" is the root itself
  int depth = 0;
  uint64_t inode = 0;
};

// A part of the tree the walk could not see: `path`'s descendants, and with
// `self` the directory itself too (it could not be opened).
struct Unknown {
  std::string path;
  bool self = false;
  bool covers(std::string_view p) const noexcept;
};

struct WalkResult {
  std::vector<Found> cgroups;    // pre-order: each parent before its descendants
  uint64_t limited = 0;          // matched, but over max_cgroups
  uint64_t no_memory = 0;        // directories without memory.stat (not descended)
  std::vector<IoError> errors;   // directories that exist but could not be read
  std::vector<Unknown> unknown;  // what those errors hid
  bool root_ok = true;           // false: the root itself could not be opened
  uint64_t listed = 0, reused = 0;  // directories listed / whose last listing stood
  // The walk found exactly the cgroups (paths and inodes, in order) of the
  // walk before it. With Walker::walk's `elide_unchanged`, `cgroups` is then
  // left empty: the caller's copy from last time stands.
  bool same_as_last = false;
};

// Walks remembering what each directory held: the next walk lists only the
// directories whose inode or link count changed (a cgroup directory's link
// count is 2 + its subdirectories), so a rescan of an unchanged tree costs a
// stat per directory instead of a listing (and an access(memory.stat) where
// the controller was missing). One walker per root; not thread-safe.
class Walker {
 public:
  WalkResult walk(const std::string& root, const config::CollectorConfig& cfg, bool elide_unchanged = false);
  // The directories below the root that the last walk found without the
  // memory controller (not descended), relative to the root; valid until the
  // next walk. Few on real hosts (systemd's udev worker cgroup), and reused
  // from walk to walk.
  const std::vector<std::string>& without_memory() const noexcept { return without_memory_; }
  // Every this many walks every directory is listed again, cache or not.
  static constexpr uint64_t kFullEvery = 30;

 private:
  // One breadth-first pass over the tree into res and hits_; returns how
  // many reused listings it found naming a removed child.
  size_t traverse(int rootfd, const std::string& root, const config::CollectorConfig& cfg, bool full, uint64_t stamp,
                  WalkResult& res);
  // The walk's cgroups in pre-order (or none, when elided as unchanged).
  WalkResult finish(bool elide_unchanged, WalkResult res);
  struct Listing;
  bool stat_dir(int rootfd, const std::string& root, const std::string& path, bool is_root, struct stat& st,
                WalkResult& res, size_t& stale);
  bool memory_here(int rootfd, const std::string& root, const std::string& path, bool is_root, bool unchanged,
                   Listing& l, WalkResult& res);
  void list_into(int rootfd, const std::string& root, const std::string& path, bool is_root, Listing& l, WalkResult& res);
  // What a directory held at the last walk. Kept in place from walk to walk
  // (a quiet rescan allocates nothing): `stamp` says which walk last saw it,
  // and directories no walk reached any more are dropped at its end.
  struct Listing {
    uint64_t inode = 0, nlink = 0;  // nlink 0: list again next walk
    std::vector<std::string> subdirs;  // full paths (relative to the root) of the subdirectories
    bool has_memory = false;  // memory.stat was there
    bool listed = false;      // subdirs holds a listing (false below max_depth)
    uint64_t stamp = 0;
  };
  struct Visit {
    const std::string* path;  // into a Listing's subdirs (or root_path_): stable for the walk
    int depth;
  };
  struct Hit {
    const std::string* path;
    int depth;
    uint64_t inode;
  };
  std::unordered_map<std::string, Listing> listings_;
  uint64_t walks_ = 0;
  const std::string root_path_ = "/";
  std::vector<Visit> queue_;  // breadth-first: a vector read front to back
  std::vector<Hit> hits_;     // this walk's cgroups, breadth-first
  std::vector<std::string> last_order_;  // the last walk's cgroups in breadth-first order
  std::vector<uint64_t> last_inodes_;    // ... their inodes
  std::vector<uint32_t> last_perm_;      // ... and the permutation that put them in pre-order
  std::vector<std::string> without_memory_;
  size_t without_memory_n_ = 0;
  std::vector<std::string> names_;  // a listing's names, reused from directory to directory
  std::string scratch_;             // a path, likewise
};

// One walk with nothing remembered.
WalkResult walk(const std::string& root, const config::CollectorConfig& cfg);

// Orders cgroup paths so that every parent sorts before its descendants and a
// subtree is contiguous ('/' sorts before every other character; "/" first).
bool path_before(std::string_view a, std::string_view b) noexcept;

// Whether `path` is a strict descendant of `ancestor` ("/" is the root).
bool path_under(std::string_view ancestor, std::string_view path) noexcept;

}  // namespace memcg::cgroupfs
