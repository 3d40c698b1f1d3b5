// The process's open descriptors, for process_open_fds. Since Linux 6.2 the
// st_size of /proc/self/fd is that count (one stat). Before, the directory
// has to be listed, and the listing costs the kernel about a microsecond per
// descriptor on hardware (it instantiates an entry for each): the 12,000
// descriptors of 1,000 cgroups cost ~10 ms per scrape on a 6.18 host,
// against ~3.5 ms for rendering and compressing the whole body. There the
// count is listed at most every kListEvery and the last one served between.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "plugin/clock.h"

namespace memcg::exporter {

// Whether a listing taken at `last` (nullopt: none yet) is due again.
bool fd_listing_due(std::optional<TimePoint> last, TimePoint now, Duration every) noexcept;

class FdCounter {
 public:
  static constexpr Duration kListEvery = std::chrono::seconds(30);

  // `dir`: a /proc/PID/fd (or, in tests, any directory whose size is 0 and
  // whose entries are the descriptors, such as /proc/self/fdinfo).
  explicit FdCounter(Clock& clock = Clock::system(), std::string dir = "/proc/self/fd")
      : clock_(clock), dir_(std::move(dir)) {}

  // The count, or nullopt if the directory cannot be read. Any thread.
  std::optional<double> count();

  // How the last count was taken: false until the kernel gave a size.
  bool sized() const;

 private:
  std::optional<double> list() const;

  Clock& clock_;
  const std::string dir_;
  mutable std::mutex mu_;
  bool sized_ = false;
  std::optional<TimePoint> listed_at_;  // guarded by mu_, as the next
  std::optional<double> listed_;
};

}  // namespace memcg::exporter
