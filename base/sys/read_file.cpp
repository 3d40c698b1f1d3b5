#include "base/sys/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "base/sys/unique_fd.h"

namespace memcg::sys {

Result<std::string> read_fd(int fd, size_t limit) {
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Result<std::string>::failure(errno);
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > limit) return Result<std::string>::failure(EFBIG);
    out.append(buf, static_cast<size_t>(n));
  }
}

Result<std::string> read_file(const std::string& path, size_t limit, int open_flags) {
  int fd;
  do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | open_flags);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return Result<std::string>::failure(errno, path);
  const UniqueFd owner(fd);
  auto r = read_fd(fd, limit);
  if (!r.ok()) return Result<std::string>::failure(r.err(), path);
  return r;
}

}  // namespace memcg::sys
