#include "exporter/exposition/fd_count.h"

#include <dirent.h>
#include <sys/stat.h>

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

std::optional<double> FdCounter::count() {
  // Linux 6.2 ("proc: report open files as size in stat() for /proc/pid/fd"):
  // the weight of the open-descriptor bitmap, no descriptor opened for it.
  // Seen here: 0 on Debian 12's 6.1, the count on 6.18.
  struct stat st {};
  const bool stat_ok = ::stat(dir_.c_str(), &st) == 0;
  std::lock_guard lock(mu_);
  if (stat_ok && st.st_size > 0) {
    sized_ = true;
    return static_cast<double>(st.st_size);
  }
  sized_ = false;
  const TimePoint now = clock_.now();
  if (fd_listing_due(listed_at_, now, kListEvery)) {
    listed_ = list();
    listed_at_ = now;
  }
  return listed_;
}

bool FdCounter::sized() const {
  std::lock_guard lock(mu_);
  return sized_;
}

}  // namespace memcg::exporter
