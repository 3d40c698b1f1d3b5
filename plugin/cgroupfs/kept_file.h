// An fd kept open for the life of a cgroup entry and re-read with one pread at
// offset 0. One read, not a loop: a second read(2) of a kernel seq_file could
// see newer values than the first (systemd reads cgroup attributes the same way).
#pragma once

#include <string>
#include <string_view>

#include "plugin/cgroupfs/file_io.h"
#include "base/sys/result.h"
#include "base/sys/unique_fd.h"

namespace memcg::cgroupfs {

using UniqueFd = sys::UniqueFd;

// The result of reading a kept file: the bytes (a view into the caller's
// buffer) or an errno. No path is carried on this path (every probe): the
// caller knows which cgroup and file it read and reports them.
using ReadResult = sys::Result<std::string_view>;

// Opens `name` relative to `dirfd` read-only (or with `access`, e.g. O_RDWR)
// and close-on-exec, or the errno (ENOENT: the file does not exist).
sys::Result<UniqueFd> open_at(int dirfd, const char* name, int access = 0 /* O_RDONLY */);

// Reads the whole file with a single pread at offset 0 into `buf`, which keeps
// its capacity between calls (grown once if a file is larger than it, then the
// read is retried, so a large memory.stat never comes back truncated).
ReadResult read_kept(FileIo& io, int fd, std::string& buf) noexcept;

// open_at + read_kept + close, for files read rarely.
ReadResult read_once(FileIo& io, int dirfd, const char* name, std::string& buf) noexcept;

}  // namespace memcg::cgroupfs
