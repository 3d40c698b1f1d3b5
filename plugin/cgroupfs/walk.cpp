#include "plugin/cgroupfs/walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <unordered_map>

namespace memcg::cgroupfs {
namespace {

struct Pending {
  std::string path;
  int depth;
};

std::string parent_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string child_path(const std::string& parent, const char* name) {
  return parent == "/" ? std::string(name) : parent + "/" + name;
}

std::string full_path(const std::string& root, const std::string& rel) {
  return rel == "/" ? root : root + "/" + rel;
}

// Lists the subdirectory names of an open directory into `names`; 0 or the
// errno. Uses a dup so the kept fd stays usable for openat; rewinds because a
// dup shares the file offset.
int list_subdirs(int dirfd, std::vector<std::string>& names) {
  names.clear();
  const int fd = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return errno;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    const int err = errno;
    ::close(fd);
    return err;
  }
  ::rewinddir(d);
  for (;;) {
    errno = 0;  // readdir reports an error only through errno: set it right before each call
    dirent* e = ::readdir(d);
    if (!e) break;
    if (e->d_name[0] == '.' && (e->d_name[1] == 0 || (e->d_name[1] == '.' && e->d_name[2] == 0))) continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st{};
      is_dir = ::fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    if (is_dir) names.emplace_back(e->d_name);
  }
  const int err = errno;
  ::closedir(d);
  std::sort(names.begin(), names.end());  // deterministic order under the cap
  return err;
}

}  // namespace

bool path_before(std::string_view a, std::string_view b) noexcept {
  if (a == "/") return b != "/";
  if (b == "/") return false;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    if (a[i] == '/') return true;
    if (b[i] == '/') return false;
    return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
  }
  return a.size() < b.size();
}

bool path_under(std::string_view anc, std::string_view path) noexcept {
  if (anc == "/") return path != "/";
  return path.size() > anc.size() && path.starts_with(anc) && path[anc.size()] == '/';
}

bool Unknown::covers(std::string_view p) const noexcept { return (self && p == path) || path_under(path, p); }

WalkResult walk(const std::string& root, const config::CollectorConfig& cfg) {
  Walker w;
  return w.walk(root, cfg);
}

WalkResult Walker::walk(const std::string& root, const config::CollectorConfig& cfg) {
  WalkResult res;
  auto opened = open_at(AT_FDCWD, root.c_str());
  if (!opened.ok()) {
    res.root_ok = false;
    res.errors.push_back({"open", root, opened.err()});
    return res;  // the listings are kept: an unreadable root says nothing about them
  }
  const UniqueFd rootfd = std::move(opened).value();
  // Every kFullEvery-th walk lists every directory again: a safety net for
  // what the link count cannot see (a child renamed in place keeps it).
  const bool full = walks_++ % kFullEvery == 0;
  std::unordered_map<std::string, Listing> seen;  // this walk's listings: the next walk's cache
  seen.reserve(listings_.size());
  std::deque<Pending> queue;
  queue.push_back({"/", 0});
  std::vector<std::string> names;
  std::string scratch;
  while (!queue.empty()) {
    Pending cur = std::move(queue.front());
    queue.pop_front();
    const bool is_root = cur.path == "/";
    // By path from the root, with no descriptor held between directories:
    // a queue of open directories would grow with the tree's width and fail
    // with EMFILE on big trees.
    struct stat st{};
    if ((is_root ? ::fstat(rootfd.get(), &st) : ::fstatat(rootfd.get(), cur.path.c_str(), &st, AT_SYMLINK_NOFOLLOW)) != 0) {
      const int err = errno;  // before anything that may allocate
      if (!is_gone(err)) {
        res.errors.push_back({"stat", full_path(root, cur.path), err});
        res.unknown.push_back({std::move(cur.path), true});
      } else if (!is_root) {
        // Listed but gone: removed since, or renamed in place (which keeps
        // the parent's link count). The parent is listed again next walk.
        seen.erase(parent_path(cur.path));
      }
      continue;
    }
    if (!S_ISDIR(st.st_mode)) continue;
    // This directory as the last walk left it: same inode and link count (2 +
    // subdirectories; kernfs sets it from the node at every stat) means the
    // same children. (A link count of 1 means the file system does not count
    // subdirectories, as on btrfs: never trusted.)
    const auto cached = listings_.find(cur.path);
    const bool unchanged = !full && st.st_nlink >= 2 && cached != listings_.end() &&
                           cached->second.inode == st.st_ino && cached->second.nlink == st.st_nlink;
    // No memory.stat: the memory controller is not enabled here, and so cannot
    // be below either (a controller is only available to children of a cgroup
    // that enables it in cgroup.subtree_control). The root is always descended:
    // kernels before 5.x have no memory.stat in the root. Asked again at every
    // walk where it was missing (enabling a controller changes no link count);
    // where it was there, the kept fds say when it goes (ENODEV), and the
    // periodic full walk asks everywhere.
    bool has_memory = unchanged && cached->second.has_memory;
    if (!has_memory) {
      scratch.assign(is_root ? "" : cur.path + "/").append("memory.stat");
      has_memory = ::faccessat(rootfd.get(), scratch.c_str(), F_OK, 0) == 0;
    }
    if (!has_memory) {
      if (const int err = errno; !is_gone(err)) {
        res.errors.push_back({"access", full_path(root, cur.path) + "/memory.stat", err});
        res.unknown.push_back({cur.path, true});
      }
      ++res.no_memory;
      if (cur.depth > 0) {
        seen[cur.path] = Listing{static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_nlink), {}, false};
        continue;
      }
    }
    if (cur.depth < cfg.max_depth) {
      // Unchanged: the last listing stands. A listing is a getdents of every
      // entry, files included (~20 us per cgroup); the check is the stat
      // already made.
      bool cacheable = true;
      if (unchanged && cached->second.listed) {
        names = std::move(cached->second.subdirs);  // listings_ is replaced by `seen` at the end
        ++res.reused;
      } else {
        int err = 0;
        int raw;
        do raw = ::openat(rootfd.get(), is_root ? "." : cur.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        while (raw < 0 && errno == EINTR);
        if (raw < 0) {
          err = errno;
          names.clear();
        } else {
          UniqueFd dir(raw);
          err = list_subdirs(dir.get(), names);
        }
        ++res.listed;
        if (err != 0 && !is_gone(err)) {
          res.errors.push_back({"list", full_path(root, cur.path), err});
          res.unknown.push_back({cur.path, false});
        }
        cacheable = err == 0;  // a failed or partial listing is made again next walk
      }
      for (const auto& name : names) queue.push_back({child_path(cur.path, name.c_str()), cur.depth + 1});
      if (cacheable)
        seen[cur.path] = Listing{static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_nlink), std::move(names), has_memory, true};
      names.clear();
    } else {
      seen[cur.path] = Listing{static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_nlink), {}, has_memory, false};
    }
    if (!has_memory || !cfg.includes(cur.path)) continue;
    if (res.cgroups.size() >= cfg.max_cgroups) {
      ++res.limited;
      continue;
    }
    res.cgroups.push_back({std::move(cur.path), cur.depth, static_cast<uint64_t>(st.st_ino)});
  }
  listings_ = std::move(seen);
  // Breadth-first order to pre-order. The sort compares paths character by
  // character; on an unchanged tree the walk finds the same paths in the same
  // order, so the last walk's permutation is applied instead (a string
  // equality per cgroup rather than n log n path comparisons).
  bool same = res.cgroups.size() == last_order_.size();
  for (size_t i = 0; same && i < res.cgroups.size(); ++i) same = res.cgroups[i].path == last_order_[i];
  if (!same) {
    last_order_.clear();
    for (const auto& f : res.cgroups) last_order_.push_back(f.path);
    last_perm_.resize(res.cgroups.size());
    for (size_t i = 0; i < last_perm_.size(); ++i) last_perm_[i] = static_cast<uint32_t>(i);
    std::sort(last_perm_.begin(), last_perm_.end(),
              [&](uint32_t a, uint32_t b) { return path_before(res.cgroups[a].path, res.cgroups[b].path); });
  }
  std::vector<Found> sorted;
  sorted.reserve(res.cgroups.size());
  for (uint32_t i : last_perm_) sorted.push_back(std::move(res.cgroups[i]));
  res.cgroups = std::move(sorted);
  return res;
}

}  // namespace memcg::cgroupfs
