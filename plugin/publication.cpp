#include "plugin/publication.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace memcg {

Publication::Publication(std::shared_ptr<const Snapshot> first) : latest_(std::move(first)) {}

bool Publication::set_on_demand() {
  if (!wanted_fd_.valid()) wanted_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  return wanted_fd_.valid();
}

std::shared_ptr<const Snapshot> Publication::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

std::shared_ptr<const Snapshot> Publication::current(Duration patience) {
  std::unique_lock lock(mu_);
  if (!owed_) return latest_;
  if (!wanted_) {
    wanted_ = true;
    const uint64_t one = 1;
    // Cannot fail short of a counter at 2^64-2; the pass's end looks at
    // wanted_ anyway.
    [[maybe_unused]] const ssize_t n = ::write(wanted_fd_.get(), &one, sizeof one);
  }
  // Served by the first store after the ask, even when a pass ends again
  // before this thread wakes up and owes newer state: waiting on !owed_
  // alone then missed that store, and the reader sat out its whole
  // patience (2 s in the daemon) to be given the same snapshot, its ages
  // two seconds older than they were.
  const uint64_t asked_at = stores_;
  stored_.wait_for(lock, patience, [&] { return !owed_ || stores_ != asked_at; });
  return latest_;
}

bool Publication::build_now() {
  std::lock_guard lock(mu_);
  if (!on_demand() || wanted_ || latest_->pass == 0) return true;
  owed_ = true;
  return false;
}

bool Publication::take_request() {
  uint64_t n = 0;
  [[maybe_unused]] const ssize_t r = ::read(wanted_fd_.get(), &n, sizeof n);  // EAGAIN: already cleared
  std::lock_guard lock(mu_);
  return owed_ && wanted_;
}

void Publication::store(std::shared_ptr<const Snapshot> next) {
  {
    std::lock_guard lock(mu_);
    latest_.swap(next);
    owed_ = wanted_ = false;
    ++stores_;
  }
  stored_.notify_all();
  next.reset();  // the previous snapshot, released outside the lock
}

}  // namespace memcg
