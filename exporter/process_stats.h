// The standard process_* metrics, read from /proc/self at scrape time (cheap
// procfs reads; never cgroupfs).
#pragma once

#include <cstdint>
#include <optional>

namespace memcg::exporter {

struct ProcessStats {
  std::optional<double> cpu_seconds;        // utime + stime
  std::optional<double> resident_bytes;
  std::optional<double> virtual_bytes;
  std::optional<double> start_time_seconds;  // since the Unix epoch
  std::optional<double> open_fds;
  std::optional<double> max_fds;
};

ProcessStats read_process_stats() noexcept;

}  // namespace memcg::exporter
