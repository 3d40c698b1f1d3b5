#include "plugin/cgroupfs/mount.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "plugin/cgroupfs/kept_file.h"
#include "base/parse/number.h"
#include "base/sys/read_file.h"

namespace memcg::cgroupfs {
namespace {

std::string unescape_octal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const char a = s[i + 1], b = s[i + 2], c = s[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

std::vector<Cgroup2Mount> cgroup2_mounts_in_mountinfo(std::string_view text) {
  std::vector<Cgroup2Mount> out;
  std::string_view line;
  while (parse::next_line(text, line)) {
    // id parent maj:min root mountpoint opts [optional...] - fstype source superopts
    const size_t sep = line.find(" - ");
    if (sep == std::string_view::npos || !line.substr(sep + 3).starts_with("cgroup2 ")) continue;
    std::string_view fields[5];
    std::string_view before = line.substr(0, sep);
    int n = 0;
    for (; n < 5 && !before.empty(); ++n) {
      const size_t sp = before.find(' ');
      fields[n] = before.substr(0, sp);
      before = sp == std::string_view::npos ? std::string_view{} : before.substr(sp + 1);
    }
    if (n == 5) out.push_back({unescape_octal(fields[3]), unescape_octal(fields[4])});
  }
  return out;
}

std::optional<std::string> find_cgroup2_in_mountinfo(std::string_view text) {
  auto mounts = cgroup2_mounts_in_mountinfo(text);
  if (mounts.empty()) return std::nullopt;
  return std::move(mounts.front().mountpoint);
}

std::optional<std::string> find_cgroup2_mount(const std::string& mountinfo_path) {
  auto text = sys::read_file(mountinfo_path);
  if (!text.ok()) return std::nullopt;
  return find_cgroup2_in_mountinfo(text.value());
}

sys::Result<bool> is_cgroup2(const std::string& path) {
  struct statfs fs{};
  if (::statfs(path.c_str(), &fs) != 0) return sys::Result<bool>::failure(errno, path);
  return fs.f_type == CGROUP2_SUPER_MAGIC;
}

bool has_memory_controller(const std::string& root) {
  auto dir = open_at(AT_FDCWD, root.c_str());
  if (!dir.ok()) return false;
  std::string buf;
  auto r = read_once(FileIo::system(), dir.value().get(), "cgroup.controllers", buf);
  if (!r.ok()) return false;
  return parse::has_field(r.value(), " \n", "memory");
}

}  // namespace memcg::cgroupfs
