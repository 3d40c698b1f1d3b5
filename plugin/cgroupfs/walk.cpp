#include "plugin/cgroupfs/walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>

namespace memcg::cgroupfs {
namespace {

struct Pending {
  std::string path;
  int depth;
};

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
  WalkResult res;
  auto opened = open_at(AT_FDCWD, root.c_str());
  if (!opened.ok()) {
    res.root_ok = false;
    res.errors.push_back({"open", root, opened.err()});
    return res;
  }
  const UniqueFd rootfd = std::move(opened).value();
  std::deque<Pending> queue;
  queue.push_back({"/", 0});
  std::vector<std::string> names;
  while (!queue.empty()) {
    Pending cur = std::move(queue.front());
    queue.pop_front();
    // Opened by its path from the root when its turn comes, not when its
    // parent was listed: a queue of open directories would grow with the
    // tree's width (one descriptor each) and fail with EMFILE on big trees.
    UniqueFd own;
    int dirfd = rootfd.get();
    if (cur.path != "/") {
      int raw;
      do raw = ::openat(rootfd.get(), cur.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      while (raw < 0 && errno == EINTR);
      if (raw < 0) {
        const int err = errno;  // before anything that may allocate
        if (!is_gone(err)) {
          res.errors.push_back({"open", full_path(root, cur.path), err});
          res.unknown.push_back({std::move(cur.path), true});
        }
        continue;
      }
      own = UniqueFd(raw);
      dirfd = raw;
    }
    // No memory.stat: the memory controller is not enabled here, and so cannot
    // be below either (a controller is only available to children of a cgroup
    // that enables it in cgroup.subtree_control). The root is always descended:
    // kernels before 5.x have no memory.stat in the root.
    const bool has_memory = ::faccessat(dirfd, "memory.stat", F_OK, 0) == 0;
    if (!has_memory) {
      if (const int err = errno; !is_gone(err)) {
        res.errors.push_back({"access", full_path(root, cur.path) + "/memory.stat", err});
        res.unknown.push_back({cur.path, true});
      }
      ++res.no_memory;
      if (cur.depth > 0) continue;
    }
    if (cur.depth < cfg.max_depth) {
      if (const int err = list_subdirs(dirfd, names); err != 0 && !is_gone(err)) {
        res.errors.push_back({"list", full_path(root, cur.path), err});
        res.unknown.push_back({cur.path, false});
      }
      for (const auto& name : names) queue.push_back({child_path(cur.path, name.c_str()), cur.depth + 1});
    }
    if (!has_memory || !cfg.includes(cur.path)) continue;
    if (res.cgroups.size() >= cfg.max_cgroups) {
      ++res.limited;
      continue;
    }
    struct stat st{};
    if (::fstat(dirfd, &st) != 0) {
      res.errors.push_back({"stat", full_path(root, cur.path), errno});
      res.unknown.push_back({std::move(cur.path), true});
      continue;
    }
    res.cgroups.push_back({std::move(cur.path), cur.depth, static_cast<uint64_t>(st.st_ino)});
  }
  std::sort(res.cgroups.begin(), res.cgroups.end(),
            [](const Found& a, const Found& b) { return path_before(a.path, b.path); });
  return res;
}

}  // namespace memcg::cgroupfs
