#include "exporter/exposition/fd_count.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>

#include "base/sys/open_descriptors.h"
#include "base/sys/read_file.h"

namespace memcg::exporter {

bool fd_listing_due(std::optional<TimePoint> last, TimePoint now, Duration every) noexcept {
  // A clock that went back (it cannot, being monotonic, but a test's can)
  // makes the listing due rather than stuck.
  return !last || now < *last || now - *last >= every;
}

std::optional<double> FdCounter::list() const {
  DIR* d = opendir(dir_.c_str());
  if (!d) return std::nullopt;
  double n = 0;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  // The listing's own descriptor is among the entries when `dir_` is this
  // process's: it was not open before the listing and is not after.
  return n > 0 ? n - 1 : n;
}

std::optional<double> FdCounter::poll_own() {
  if (!own_) return std::nullopt;
  const auto status = sys::read_file("/proc/self/status", 64 << 10);
  size_t slots = status.ok() ? sys::fd_table_size(status.value()) : 0;
  // poll(2) refuses more slots than the soft limit; a descriptor above a
  // limit lowered after it was opened is missed (the listing would see it).
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) slots = std::min<size_t>(slots, lim.rlim_cur);
  if (slots == 0) return std::nullopt;
  const auto n = sys::count_open_descriptors(slots, slots_);
  if (!n.ok()) return std::nullopt;
  return static_cast<double>(n.value());
}

std::optional<double> FdCounter::count() {
  // Linux 6.2 ("proc: report open files as size in stat() for /proc/pid/fd"):
  // the weight of the open-descriptor bitmap, no descriptor opened for it.
  // Seen here: 0 on Debian 12's 6.1, the count on 6.18.
  struct stat st {};
  const bool stat_ok = ::stat(dir_.c_str(), &st) == 0;
  std::lock_guard lock(mu_);
  if (stat_ok && st.st_size > 0) {
    method_ = Method::sized;
    return static_cast<double>(st.st_size);
  }
  const TimePoint now = clock_.now();
  // Never counted yet: listed_at_ is empty, so due.
  if (method_ == Method::sized || fd_listing_due(listed_at_, now, kListEvery)) {
    const auto polled = stat_ok ? poll_own() : std::nullopt;
    method_ = polled ? Method::polled : Method::listed;
    listed_ = polled ? polled : list();
    listed_at_ = now;
  }
  return listed_;
}

FdCounter::Method FdCounter::method() const {
  std::lock_guard lock(mu_);
  return method_;
}

}  // namespace memcg::exporter
