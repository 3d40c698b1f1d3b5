// Whole-file reads for files read at load time or now and then
// (configuration, mountinfo, TLS files, hook records): read(2) until EOF,
// retried on EINTR, bounded so a huge or endless file cannot exhaust memory.
// (Cgroup files the collector re-reads use cgroupfs/kept_file.h: one pread.)
#pragma once

#include <cstddef>
#include <string>

#include "base/sys/result.h"

namespace memcg::sys {

inline constexpr size_t kDefaultReadLimit = 16u << 20;

// The contents of `path`; EFBIG when it holds more than `limit` bytes.
Result<std::string> read_file(const std::string& path, size_t limit = kDefaultReadLimit, int open_flags = 0);
// The rest of an open file, read the same way (the fd is not closed).
Result<std::string> read_fd(int fd, size_t limit = kDefaultReadLimit);

}  // namespace memcg::sys
