#include "plugin/cgroupfs/oomd_xattr.h"

#include <cerrno>
#include <charconv>
#include <string_view>

namespace memcg::cgroupfs {
namespace {

constexpr std::string_view kOoms = "user.oomd_ooms", kKills = "user.oomd_kill";

// ENODATA: the attribute went between the list and the get; ENOTSUP: the
// filesystem has no user xattrs (cgroupfs before 5.7). Neither is an error.
bool quiet(int err) noexcept { return err == ENODATA || err == ENOTSUP; }

std::optional<uint64_t> get(FileIo& io, int dirfd, const char* name, int& error) noexcept {
  char buf[32];
  const ssize_t n = io.fgetxattr(dirfd, name, buf, sizeof buf);
  if (n < 0) {
    if (!quiet(errno)) error = errno;
    return std::nullopt;
  }
  std::string_view v(buf, static_cast<size_t>(n));
  while (!v.empty() && (v.back() == '\0' || v.back() == '\n')) v.remove_suffix(1);
  uint64_t out = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || r.ec != std::errc{} || r.ptr != v.data() + v.size()) {
    error = EINVAL;
    return std::nullopt;
  }
  return out;
}

}  // namespace

OomdXattrs read_oomd_xattrs(FileIo& io, int dirfd) noexcept {
  OomdXattrs out;
  char names[512];
  const ssize_t n = io.flistxattr(dirfd, names, sizeof names);
  if (n < 0) {
    // ERANGE: more names than fit; ask for the two directly.
    if (errno != ERANGE) {
      if (!quiet(errno)) out.error = errno;
      return out;
    }
    out.ooms = get(io, dirfd, kOoms.data(), out.error);
    out.kills = get(io, dirfd, kKills.data(), out.error);
    return out;
  }
  // The list is NUL-separated names.
  for (std::string_view rest(names, static_cast<size_t>(n)); !rest.empty();) {
    const size_t end = rest.find('\0');
    const std::string_view name = rest.substr(0, end);
    if (name == kOoms) out.ooms = get(io, dirfd, kOoms.data(), out.error);
    else if (name == kKills) out.kills = get(io, dirfd, kKills.data(), out.error);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace memcg::cgroupfs
