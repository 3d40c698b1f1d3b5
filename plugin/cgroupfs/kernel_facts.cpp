#include "plugin/cgroupfs/kernel_facts.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <charconv>

#include "base/sys/read_file.h"

namespace memcg::cgroupfs {
namespace {

// A key at the start of a line of a flat-keyed file.
bool has_key(std::string_view text, std::string_view key) {
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    const std::string_view line = text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ' ') return true;
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return false;
}

// The first child cgroup of the root with the memory controller, or "".
std::string first_child_memcg(const std::string& root) {
  DIR* d = ::opendir(root.c_str());
  if (!d) return {};
  std::string found;
  while (const dirent* de = ::readdir(d)) {
    if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)) continue;
    const std::string dir = root + "/" + de->d_name;
    if (::access((dir + "/memory.peak").c_str(), F_OK) == 0 || ::access((dir + "/memory.current").c_str(), F_OK) == 0) {
      found = dir;
      break;
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace

std::optional<KernelVersion> parse_kernel_release(std::string_view release) noexcept {
  KernelVersion v;
  const char* p = release.data();
  const char* end = p + release.size();
  auto r = std::from_chars(p, end, v.major);
  if (r.ec != std::errc{} || r.ptr == end || *r.ptr != '.') return std::nullopt;
  r = std::from_chars(r.ptr + 1, end, v.minor);
  if (r.ec != std::errc{}) return std::nullopt;
  return v;
}

std::string kernel_release() {
  struct utsname u{};
  return ::uname(&u) == 0 ? std::string(u.release) : std::string();
}

RootFs root_fs(const std::string& root) noexcept {
  struct statfs fs{};
  return ::statfs(root.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC ? RootFs::cgroup2fs : RootFs::other;
}

bool KernelFacts::has(std::string_view feature) const noexcept {
  for (const auto& f : features)
    if (f.name == feature) return f.present;
  return false;
}

KernelFacts probe_kernel(const std::string& root, std::string_view release, const config::HostFacts& host, RootFs fs) {
  KernelFacts k;
  k.release = std::string(release);
  k.root_fs = fs;
  k.version = parse_kernel_release(release);
  k.host = host;
  const auto stat = sys::read_file(root + "/memory.stat");
  const std::string_view keys = stat.ok() ? std::string_view(stat.value()) : std::string_view{};
  const std::string child = first_child_memcg(root);
  // memory.peak is read-only before 6.12; from 6.12 a write resets the peak
  // seen through that one open file. Elsewhere than on cgroup2fs the write
  // would replace the file's content: not a feature there.
  struct stat peak{};
  const bool peak_file_writable = !child.empty() && ::stat((child + "/memory.peak").c_str(), &peak) == 0 && (peak.st_mode & S_IWUSR);
  const bool peak_writable = peak_file_writable && fs == RootFs::cgroup2fs;
  const bool per_cgroup = k.version && *k.version >= KernelVersion{6, 8};
  k.features = {
      {"stat_flush_per_cgroup", per_cgroup,
       per_cgroup ? "a memory.stat read flushes when this cgroup's subtree has more pending updates than the threshold"
                  : "a memory.stat read flushes when the whole host has more pending updates than the threshold"},
      {"psi", !child.empty() && ::access((child + "/memory.pressure").c_str(), F_OK) == 0,
       "memory.pressure totals are served (memcg_memory_pressure_stalled_seconds_total)"},
      {"memory_stat_zswap", has_key(keys, "zswap"), "zswap, zswapped and zswp* are memory.stat keys like any other"},
      {"memory_stat_hugetlb", has_key(keys, "hugetlb"), "hugetlb (memory_hugetlb_accounting) is a memory.stat key like any other"},
      {"memory_peak_fd_reset", peak_writable,
       peak_file_writable && fs != RootFs::cgroup2fs
           ? "the root is not cgroup2fs (a fixture or demo tree), where writing memory.peak would replace its "
             "content; memcg-exporter writes nothing there"
           : "where the daemon may write memory.peak, each read resets it: memcg_memory_current_max_1m_bytes then has "
             "the peak between two reads, not only what the probes saw"},
  };
  return k;
}

}  // namespace memcg::cgroupfs
