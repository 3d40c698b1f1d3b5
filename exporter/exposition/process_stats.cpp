#include "exporter/exposition/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "base/sys/read_file.h"

namespace memcg::exporter {
namespace {

// Taken during static initialisation, before main(): the process's start to
// within a millisecond, without /proc/stat (hidden by the unit's ProcSubset=pid).
const double g_start_unix =
    std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

}  // namespace

ProcessStats read_process_stats(FdCounter& fds) noexcept {
  ProcessStats s;
  s.start_time_seconds = g_start_unix;
  try {
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    auto stat = sys::read_file("/proc/self/stat", 4096);
    const std::string line = stat.ok() ? stat.value().substr(0, stat.value().find('\n')) : std::string();
    if (!line.empty()) {
      // Fields after the command name, which may itself contain spaces and ')'.
      const size_t rp = line.rfind(')');
      if (rp != std::string::npos) {
        std::istringstream rest(line.substr(rp + 2));
        std::string f[22];
        for (auto& x : f) rest >> x;
        // f[0] is field 3 (state): utime=14, stime=15, vsize=23, rss=24.
        if (!f[11].empty() && !f[12].empty()) s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
        if (!f[20].empty()) s.virtual_bytes = std::stod(f[20]);
        if (!f[21].empty()) s.resident_bytes = std::stod(f[21]) * page;
      }
    }
    s.open_fds = fds.count();
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) s.max_fds = static_cast<double>(lim.rlim_cur);
  } catch (...) {
  }
  return s;
}

}  // namespace memcg::exporter
