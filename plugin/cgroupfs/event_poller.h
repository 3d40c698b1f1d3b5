// Which kept event files the kernel flagged. kernfs notifies pollers of
// memory.events and memory.swap.events on every change (memcg_memory_event
// -> cgroup_file_notify, at most every 10 ms per file); production watches
// them with one level-triggered epoll set (EPOLLPRI), whose own descriptor
// the daemon waits on between passes. A seam, because the regular files of
// fixture trees cannot be polled: tests flag files by hand.
#pragma once

#include <memory>
#include <span>

namespace memcg::cgroupfs {

class EventPoller {
 public:
  virtual ~EventPoller() = default;
  // Watches `fd`; false where it cannot be polled (a regular file: EPERM),
  // which is then read every pass instead. Closing the fd stops the watch.
  virtual bool add(int fd) noexcept = 0;
  // The watched fds flagged now, without waiting, into `out` (room for every
  // watched fd): how many. A flag stays until the file is read.
  virtual size_t flagged(std::span<int> out) noexcept = 0;
  // Readable while a watched fd is flagged; -1 if there is none.
  virtual int fd() const noexcept = 0;
};

std::unique_ptr<EventPoller> make_epoll_poller();

}  // namespace memcg::cgroupfs
