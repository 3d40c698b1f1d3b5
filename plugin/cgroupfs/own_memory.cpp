#include "plugin/cgroupfs/own_memory.h"

#include <cerrno>

#include "base/parse/number.h"
#include "base/parse/single_value.h"
#include "base/sys/read_file.h"

namespace memcg::cgroupfs {
namespace {

// The cgroup v2 line of a /proc/<pid>/cgroup text ("0::PATH"), or "".
std::string_view unified_path(std::string_view text) {
  std::string_view line;
  while (parse::next_line(text, line))
    if (line.starts_with("0::")) return line.substr(3);
  return {};
}

// `path` below `root` ("/a/b" below "/a" is "/b", below "/" itself), or
// nullopt when it is not.
std::optional<std::string_view> below(std::string_view path, std::string_view root) {
  if (root == "/") return path;
  if (!path.starts_with(root)) return std::nullopt;
  std::string_view rest = path.substr(root.size());
  if (!rest.empty() && rest.front() != '/') return std::nullopt;  // "/ab" is not below "/a"
  return rest;
}

// Whether a path has a ".." component: the kernel writes /proc/self/cgroup
// paths and mount roots outside the reader's cgroup namespace as "/../x"
// (a cgroup named "..x" is inside).
bool has_dotdot(std::string_view path) { return parse::has_field(path, "/", ".."); }

// One limit file: its value when set, nullopt when "max" or absent.
sys::Result<std::optional<uint64_t>> limit_in(const std::string& file) {
  auto text = sys::read_file(file, 64);
  if (!text.ok()) {
    if (text.err() == ENOENT) return std::optional<uint64_t>{};
    return sys::Result<std::optional<uint64_t>>::failure(text.err(), file);
  }
  const auto v = parse::parse_single_value(text.value());
  if (!v) return sys::Result<std::optional<uint64_t>>::failure(EINVAL, file);
  return v->unlimited ? std::optional<uint64_t>{} : std::optional<uint64_t>{v->value};
}

}  // namespace

std::optional<OwnCgroup> own_cgroup_dir(std::string_view proc_self_cgroup, const std::vector<Cgroup2Mount>& mounts) {
  const std::string_view path = unified_path(proc_self_cgroup);
  // A path outside the reader's namespace ("/../x") names nothing a mount shows.
  if (path.empty() || path.front() != '/' || has_dotdot(path)) return std::nullopt;
  for (const Cgroup2Mount& m : mounts) {
    if (has_dotdot(m.root)) continue;
    if (auto rest = below(path, m.root)) {
      std::string dir = m.mountpoint;
      if (!rest->empty() && *rest != "/") dir += *rest;
      return OwnCgroup{std::move(dir), m.mountpoint};
    }
  }
  return std::nullopt;
}

sys::Result<std::optional<MemoryLimit>> lowest_memory_limit(const OwnCgroup& c) {
  std::optional<MemoryLimit> lowest;
  std::string dir = c.dir;
  for (;;) {
    for (const char* name : {"/memory.max", "/memory.high"}) {
      const std::string file = dir + name;
      auto v = limit_in(file);
      if (!v.ok()) return sys::Result<std::optional<MemoryLimit>>::failure(v.err(), v.path());
      if (v.value() && (!lowest || *v.value() < lowest->bytes)) lowest = MemoryLimit{*v.value(), file};
    }
    // Up to the mount point, never past it: above it is not this mount's.
    if (dir.size() <= c.mountpoint.size()) break;
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos || slash < c.mountpoint.size()) break;
    dir.resize(slash);
  }
  return lowest;
}

sys::Result<std::optional<MemoryLimit>> own_memory_limit(const std::string& proc_cgroup, const std::string& mountinfo) {
  auto self = sys::read_file(proc_cgroup);
  if (!self.ok()) return sys::Result<std::optional<MemoryLimit>>::failure(self.err(), proc_cgroup);
  auto mounts = sys::read_file(mountinfo);
  if (!mounts.ok()) return sys::Result<std::optional<MemoryLimit>>::failure(mounts.err(), mountinfo);
  const auto own = own_cgroup_dir(self.value(), cgroup2_mounts_in_mountinfo(mounts.value()));
  // Unknown, not unlimited: the limit files cannot be reached (a container
  // with no cgroup2 mount of its own, a cgroup outside the namespace).
  if (!own)
    return sys::Result<std::optional<MemoryLimit>>::failure(
        ENOENT, "no cgroup2 mount in " + mountinfo + " shows the cgroup in " + proc_cgroup);
  return lowest_memory_limit(*own);
}

}  // namespace memcg::cgroupfs
