// Where the collector hands its snapshots to readers (HTTP threads, the
// JSON API). By default every pass stores one. On demand (the daemon), a
// pass only notes that the readers are owed its state, and the snapshot is
// built when a reader asks: at one scrape every 15 s and a 1 s probe
// interval that is one snapshot, a copy of every cgroup's view, per scrape
// instead of fifteen. A reader that asks waits for the build on the pass
// thread (between passes, a wake-up through wanted_fd(); during one, its
// end), at most `patience`, then takes the last snapshot stored: a stuck
// pass delays a scrape, it cannot hold one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "base/sys/unique_fd.h"
#include "plugin/clock.h"
#include "plugin/snapshot.h"

namespace memcg {

class Publication {
 public:
  explicit Publication(std::shared_ptr<const Snapshot> first);

  // Pass thread, before the first pass: build only when a reader asks.
  // False when the wake-up descriptor cannot be made (every pass builds then).
  bool set_on_demand();
  bool on_demand() const noexcept { return wanted_fd_.valid(); }

  // Any thread, never waits: the last snapshot stored.
  std::shared_ptr<const Snapshot> latest() const;
  // Any thread: the snapshot of the collector's state as of its last pass
  // or event wake-up when asked, asking the pass thread to build it when
  // owed (on demand): the first one stored after the ask, even if a pass
  // ended again since; after `patience` without one, the last one stored.
  std::shared_ptr<const Snapshot> current(Duration patience);

  // Pass thread, when a pass or an event wake-up changed what a snapshot
  // would show: true when one is to be built now (every pass, a reader
  // waits, or no pass was stored yet); false when it is owed to the next
  // reader instead.
  bool build_now();
  // Pass thread, when wanted_fd() is readable: clears it; true when a reader
  // waits for a snapshot still owed.
  bool take_request();
  // Readable while a reader asked for a snapshot (-1 unless on demand).
  int wanted_fd() const noexcept { return wanted_fd_.get(); }
  // Pass thread: the new latest snapshot; wakes the readers waiting for it.
  void store(std::shared_ptr<const Snapshot> next);

 private:
  // Held only to copy or swap the pointer and the flags, not
  // std::atomic<shared_ptr>: libstdc++ 12 implements that with a lock bit
  // ThreadSanitizer cannot see, and the TSan run is how races get caught here.
  mutable std::mutex mu_;
  std::condition_variable stored_;
  std::shared_ptr<const Snapshot> latest_;
  bool owed_ = false;    // the pass thread's state is newer than latest_
  bool wanted_ = false;  // a reader asked since the last store
  uint64_t stores_ = 0;  // snapshots stored: a waiting reader's "served" is one more than at its ask
  sys::UniqueFd wanted_fd_;  // eventfd: the reader's ask, for the pass thread's wait
};

}  // namespace memcg
