#include "plugin/cgroupfs/walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

namespace memcg::cgroupfs {
namespace {

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

WalkResult Walker::walk(const std::string& root, const config::CollectorConfig& cfg, bool elide_unchanged) {
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
  // A child removed and another created in the same directory between two
  // walks keep its link count, so its reused listing names the removed one
  // and not the new one. Finding the removed one gone marks the directory
  // for listing, and the traversal is made once more at once: the new
  // cgroup is found by this walk, not the next rescan's (the cost, one
  // more stat per directory, only in that case).
  if (traverse(rootfd.get(), root, cfg, full, walks_, res) > 0) {
    res = WalkResult{};
    traverse(rootfd.get(), root, cfg, full, ++walks_, res);
  }
  return finish(elide_unchanged, std::move(res));
}

size_t Walker::traverse(int rootfd, const std::string& root, const config::CollectorConfig& cfg, bool full,
                        uint64_t stamp, WalkResult& res) {
  size_t stale = 0;
  queue_.clear();
  hits_.clear();
  without_memory_n_ = 0;
  queue_.push_back({&root_path_, 0});
  for (size_t q = 0; q < queue_.size(); ++q) {
    const Visit cur = queue_[q];
    const std::string& path = *cur.path;
    const bool is_root = cur.depth == 0;
    struct stat st{};
    if (!stat_dir(rootfd, root, path, is_root, st, res, stale) || !S_ISDIR(st.st_mode)) continue;
    // This directory as the last walk left it: same inode and link count (2 +
    // subdirectories; kernfs sets it from the node at every stat) means the
    // same children. (A link count of 1 means the file system does not count
    // subdirectories, as on btrfs: never trusted.)
    auto it = listings_.find(path);
    const bool unchanged = !full && st.st_nlink >= 2 && it != listings_.end() &&
                           it->second.inode == st.st_ino && it->second.nlink == st.st_nlink;
    if (it == listings_.end()) it = listings_.emplace(path, Listing{}).first;
    Listing& l = it->second;
    l.stamp = stamp;
    l.inode = st.st_ino;
    l.nlink = st.st_nlink;
    const bool has_memory = memory_here(rootfd, root, path, is_root, unchanged, l, res);
    if (!has_memory && !is_root) continue;  // nothing with the controller below
    if (cur.depth < cfg.max_depth) {
      // Unchanged: the last listing stands. A listing is a getdents of every
      // entry, files included (~20 us per cgroup); the check is the stat
      // already made.
      if (unchanged && l.listed) ++res.reused;
      else list_into(rootfd, root, path, is_root, l, res);
      for (const auto& child : l.subdirs) queue_.push_back({&child, cur.depth + 1});
    } else {
      l.subdirs.clear();
      l.listed = false;
    }
    if (!has_memory || !cfg.includes(path)) continue;
    if (hits_.size() >= cfg.max_cgroups) {
      ++res.limited;
      continue;
    }
    hits_.push_back({cur.path, cur.depth, static_cast<uint64_t>(st.st_ino)});
  }
  // Directories this walk did not reach (removed, or now below a cgroup
  // without the controller or past max_depth) are forgotten. The queue's
  // pointers into listings are not used past this point.
  std::erase_if(listings_, [&](const auto& kv) { return kv.second.stamp != stamp; });
  without_memory_.resize(without_memory_n_);
  return stale;
}

// By path from the root, with no descriptor held between directories: a
// queue of open directories would grow with the tree's width and fail with
// EMFILE on big trees. False when it cannot be seen (an error: unknown) or
// is gone (its parent's listing was stale: counted, listed again).
bool Walker::stat_dir(int rootfd, const std::string& root, const std::string& path, bool is_root, struct stat& st,
                      WalkResult& res, size_t& stale) {
  if ((is_root ? ::fstat(rootfd, &st) : ::fstatat(rootfd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW)) == 0) return true;
  const int err = errno;  // before anything that may allocate
  if (!is_gone(err)) {
    res.errors.push_back({"stat", full_path(root, path), err});
    res.unknown.push_back({path, true});
  } else if (!is_root) {
    // Listed but gone: removed since, or renamed in place (which keeps the
    // parent's link count).
    if (auto parent = listings_.find(parent_path(path)); parent != listings_.end() && parent->second.nlink != 0) {
      parent->second.nlink = 0;
      ++stale;
    }
  }
  return false;
}

// No memory.stat: the memory controller is not enabled here, and so cannot
// be below either (a controller is only available to children of a cgroup
// that enables it in cgroup.subtree_control). The root is always descended:
// kernels before 5.x have no memory.stat in the root. Asked again at every
// walk where it was missing (enabling a controller changes no link count);
// where it was there, the kept fds say when it goes (ENODEV), and the
// periodic full walk asks everywhere.
bool Walker::memory_here(int rootfd, const std::string& root, const std::string& path, bool is_root, bool unchanged,
                         Listing& l, WalkResult& res) {
  bool has_memory = unchanged && l.has_memory;
  if (!has_memory) {
    scratch_.assign(is_root ? "" : path + "/").append("memory.stat");
    has_memory = ::faccessat(rootfd, scratch_.c_str(), F_OK, 0) == 0;
  }
  l.has_memory = has_memory;
  if (has_memory) return true;
  if (const int err = errno; !is_gone(err)) {
    res.errors.push_back({"access", full_path(root, path) + "/memory.stat", err});
    res.unknown.push_back({path, true});
  }
  ++res.no_memory;
  if (!is_root) {
    // Kept in place: assign() into an existing string allocates only when a
    // path outgrows it.
    if (without_memory_n_ == without_memory_.size()) without_memory_.emplace_back();
    without_memory_[without_memory_n_++].assign(path);
    l.subdirs.clear();
    l.listed = false;
  }
  return false;
}

// Lists the directory's subdirectories into its listing.
void Walker::list_into(int rootfd, const std::string& root, const std::string& path, bool is_root, Listing& l,
                       WalkResult& res) {
  int err = 0;
  int raw;
  do raw = ::openat(rootfd, is_root ? "." : path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  while (raw < 0 && errno == EINTR);
  if (raw < 0) {
    err = errno;
    names_.clear();
  } else {
    UniqueFd dir(raw);
    err = list_subdirs(dir.get(), names_);
  }
  ++res.listed;
  if (err != 0 && !is_gone(err)) {
    res.errors.push_back({"list", full_path(root, path), err});
    res.unknown.push_back({path, false});
  }
  l.subdirs.clear();
  for (const auto& name : names_) l.subdirs.push_back(child_path(path, name.c_str()));
  l.listed = true;
  if (err != 0) l.nlink = 0;  // a failed or partial listing is made again next walk
}

WalkResult Walker::finish(bool elide_unchanged, WalkResult res) {
  // The same cgroups as last time, in the same order: nothing for the caller
  // to reconcile.
  bool same = hits_.size() == last_order_.size();
  for (size_t i = 0; same && i < hits_.size(); ++i)
    same = hits_[i].inode == last_inodes_[i] && *hits_[i].path == last_order_[i];
  res.same_as_last = same;
  if (same && elide_unchanged) return res;
  res.cgroups.reserve(hits_.size());
  for (const Hit& h : hits_) res.cgroups.push_back({*h.path, h.depth, h.inode});
  // Breadth-first order to pre-order. The sort compares paths character by
  // character; on an unchanged tree the walk finds the same paths in the same
  // order, so the last walk's permutation is applied instead.
  bool same_paths = res.cgroups.size() == last_order_.size();
  for (size_t i = 0; same_paths && i < res.cgroups.size(); ++i) same_paths = res.cgroups[i].path == last_order_[i];
  if (!same_paths) {
    last_order_.clear();
    for (const auto& f : res.cgroups) last_order_.push_back(f.path);
    last_perm_.resize(res.cgroups.size());
    for (size_t i = 0; i < last_perm_.size(); ++i) last_perm_[i] = static_cast<uint32_t>(i);
    std::sort(last_perm_.begin(), last_perm_.end(),
              [&](uint32_t a, uint32_t b) { return path_before(res.cgroups[a].path, res.cgroups[b].path); });
  }
  last_inodes_.clear();
  for (const auto& f : res.cgroups) last_inodes_.push_back(f.inode);
  std::vector<Found> sorted;
  sorted.reserve(res.cgroups.size());
  for (uint32_t i : last_perm_) sorted.push_back(std::move(res.cgroups[i]));
  res.cgroups = std::move(sorted);
  return res;
}

}  // namespace memcg::cgroupfs
