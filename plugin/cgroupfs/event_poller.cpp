#include "plugin/cgroupfs/event_poller.h"

#include <sys/epoll.h>

#include <vector>

#include "base/sys/unique_fd.h"

namespace memcg::cgroupfs {
namespace {

class EpollPoller final : public EventPoller {
 public:
  EpollPoller() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {}

  bool add(int fd) noexcept override {
    if (!epoll_.valid()) return false;
    epoll_event ev{};
    ev.events = EPOLLPRI;
    ev.data.fd = fd;
    return ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
  }

  // One bounded call: the set is level-triggered, so a flagged fd stays
  // ready until it is read, and calling again until the result is short
  // would return the same fds forever (kernfs flags every memory.events
  // right after open when events happened since boot). Anything not
  // consumed now is still ready next time.
  size_t flagged(std::span<int> out) noexcept override {
    if (!epoll_.valid() || out.empty()) return 0;
    if (events_.size() < out.size()) events_.resize(out.size());
    const int got = ::epoll_wait(epoll_.get(), events_.data(), static_cast<int>(out.size()), 0);
    for (int i = 0; i < got; ++i) out[static_cast<size_t>(i)] = events_[static_cast<size_t>(i)].data.fd;
    return got > 0 ? static_cast<size_t>(got) : 0;
  }

  int fd() const noexcept override { return epoll_.get(); }

 private:
  sys::UniqueFd epoll_;
  std::vector<epoll_event> events_;
};

}  // namespace

std::unique_ptr<EventPoller> make_epoll_poller() { return std::make_unique<EpollPoller>(); }

}  // namespace memcg::cgroupfs
