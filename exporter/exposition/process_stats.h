// The standard process_* metrics, read from /proc/self at scrape time (cheap
// procfs reads; never cgroupfs; the descriptor count as fd_count.h says).
#pragma once

#include <cstdint>
#include <optional>

#include "exporter/exposition/fd_count.h"

namespace memcg::exporter {

struct ProcessStats {
  std::optional<double> cpu_seconds;        // utime + stime
  std::optional<double> resident_bytes;
  std::optional<double> virtual_bytes;
  std::optional<double> start_time_seconds;  // since the Unix epoch
  std::optional<double> open_fds;
  std::optional<double> max_fds;
};

ProcessStats read_process_stats(FdCounter& fds) noexcept;

}  // namespace memcg::exporter
