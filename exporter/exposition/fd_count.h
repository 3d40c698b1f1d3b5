// The process's open descriptors, for process_open_fds. Since Linux 6.2 the
// st_size of /proc/self/fd is that count (one stat), taken at every scrape.
// Before, the count is taken at most every kListEvery and the last one
// served between: this process's from one poll(2) over its descriptor table
// (base/sys/open_descriptors.h), or, when that cannot be made (and for
// another directory: tests), by listing the directory, which costs the
// kernel about a microsecond per descriptor on hardware (an entry
// instantiated for each: ~10 ms for the 12,000 descriptors of 1,000 cgroups,
// against ~3.5 ms for rendering and compressing the whole body). The poll
// does not instantiate anything, but still looks up every descriptor and
// asks its file: in the emulated 6.1 guest a poll at every scrape cost about
// what a listing every other scrape had (docs/performance.md).
#pragma once

#include <poll.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "plugin/clock.h"

namespace memcg::exporter {

// Whether a listing taken at `last` (nullopt: none yet) is due again.
bool fd_listing_due(std::optional<TimePoint> last, TimePoint now, Duration every) noexcept;

class FdCounter {
 public:
  static constexpr Duration kListEvery = std::chrono::seconds(30);

  // `dir`: /proc/self/fd, or, in tests, any directory whose size is 0 and
  // whose entries are the descriptors, such as /proc/self/fdinfo. `own`:
  // the entries are this process's descriptors, which a poll can count when
  // the directory gives no size (by default: `dir` is /proc/self/fd).
  explicit FdCounter(Clock& clock = Clock::system(), std::string dir = "/proc/self/fd")
      : FdCounter(clock, dir, dir == "/proc/self/fd") {}
  FdCounter(Clock& clock, std::string dir, bool own) : clock_(clock), dir_(std::move(dir)), own_(own) {}

  // The count, or nullopt if it cannot be taken. Any thread.
  std::optional<double> count();

  enum class Method { none, sized, polled, listed };
  // How the last count was taken (sized: at this call; polled or listed: at
  // most kListEvery ago).
  Method method() const;

 private:
  std::optional<double> list() const;
  std::optional<double> poll_own();  // under mu_

  Clock& clock_;
  const std::string dir_;
  const bool own_;
  mutable std::mutex mu_;
  Method method_ = Method::none;
  std::vector<pollfd> slots_;  // guarded by mu_: poll_own's array, kept
  std::optional<TimePoint> listed_at_;  // guarded by mu_, as the next
  std::optional<double> listed_;
};

}  // namespace memcg::exporter
