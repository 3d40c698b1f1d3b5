// The collection root's memory.pressure, read once a pass for the PSI gate
// (cache/psi_gate.h): its "some" total, or nothing where the file is absent
// (a kernel without PSI, psi=0) or unreadable. Kept open; opened again after
// a rescan when it could not be.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/sys/unique_fd.h"
#include "plugin/cgroupfs/file_io.h"

namespace memcg {

class RootPressure {
 public:
  RootPressure(std::string root, cgroupfs::FileIo& io) : path_(std::move(root) + "/memory.pressure"), io_(io) {}
  // The "some" total in microseconds; counts the read in `reads` when one was made.
  std::optional<uint64_t> some_total_us(uint64_t& reads);
  // After a rescan: a file that could not be opened is tried again.
  void retry() noexcept { tried_ = false; }

 private:
  std::string path_;
  cgroupfs::FileIo& io_;
  sys::UniqueFd fd_;
  bool tried_ = false;
  std::string buf_;
};

}  // namespace memcg
