#include "plugin/runtime/engine_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "plugin/runtime/engine_api.h"

namespace memcg::runtime {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events`, the deadline passes (ETIMEDOUT) or
// the worker stops (ECANCELED). 0 when ready.
int wait_ready(int fd, short events, int wake, SteadyClock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    if (left <= 0) return ETIMEDOUT;
    pollfd p[2] = {{fd, events, 0}, {wake, POLLIN, 0}};
    const int n = ::poll(p, 2, static_cast<int>(std::min<long long>(left, 60'000)) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (p[1].revents) return ECANCELED;
    if (p[0].revents) return 0;
  }
}

// A non-blocking connection to the Unix socket at `path` in `fd`; 0 or errno.
int connect_unix(const std::string& path, int cancel_fd, SteadyClock::time_point deadline, sys::UniqueFd& fd) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return ENAMETOOLONG;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  fd = sys::UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errno;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return 0;
  if (errno != EINPROGRESS && errno != EAGAIN) return errno;
  if (int e = wait_ready(fd.get(), POLLOUT, cancel_fd, deadline)) return e;
  int soerr = 0;
  socklen_t len = sizeof soerr;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) return errno;
  return soerr;
}

// All of `data` written before the deadline; 0 or errno.
int send_all(int fd, const std::string& data, int cancel_fd, SteadyClock::time_point deadline) {
  for (size_t sent = 0; sent < data.size();) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      if (int e = wait_ready(fd, POLLOUT, cancel_fd, deadline)) return e;
    } else {
      return n < 0 ? errno : EPIPE;
    }
  }
  return 0;
}

// The reply, read until it is complete by its own framing or the engine
// closes; never more than a reply may be (headers get 64 KiB on top). 0 or
// errno (EMSGSIZE, EPROTO for what is not an HTTP reply).
int read_reply(int fd, int cancel_fd, SteadyClock::time_point deadline, std::optional<HttpReply>& reply) {
  std::string raw, error;
  char buf[16384];
  for (bool eof = false; !reply;) {
    if (!eof) {
      if (int e = wait_ready(fd, POLLIN, cancel_fd, deadline)) return e;
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) return errno;
      if (n == 0) eof = true;
      raw.append(buf, static_cast<size_t>(n));
      if (raw.size() > kMaxEngineReplyBytes + 64 * 1024) return EMSGSIZE;
    }
    reply = parse_http_reply(raw, eof, error);
    if (!reply && (!error.empty() || eof)) return EPROTO;
  }
  return 0;
}

}  // namespace

// The worker's task: what to ask, what was answered, and the sockets' state.
class EngineClient::Lookups final : public LookupWorker::Task {
 public:
  explicit Lookups(Options options) : options_(std::move(options)), failing_(options_.sockets.size()),
                                      resting_(options_.sockets.size()) {}

  bool want(const std::unordered_set<std::string>& ids, TimePoint now);  // true: something was queued
  std::shared_ptr<const RecordMap> records() const {
    std::lock_guard lock(mu_);
    return records_.published;
  }
  uint64_t generation() const {
    std::lock_guard lock(mu_);
    return records_.generation;
  }
  EngineStats stats() const {
    std::lock_guard lock(mu_);
    EngineStats s = stats_;
    s.cached = records_.found.size();
    return s;
  }
  std::vector<IoError> take_errors() {
    std::lock_guard lock(mu_);
    return std::exchange(errors_, {});
  }
  bool pending() const override {
    std::lock_guard lock(mu_);
    return !queue_.empty();
  }
  void step(int cancel_fd) override;

  const Options options_;

 private:
  struct Entry {
    LookupResult state = LookupResult::error;
    bool queued = true;
    TimePoint asked{};  // when want() queued it
  };
  struct Outcome {
    LookupResult result = LookupResult::error;
    ContainerRecord record;
    int err = 0;  // for LookupResult::error
  };

  Outcome lookup(const std::string& socket, const std::string& id, int cancel_fd) const;
  void record_locked(const std::string& id, const std::vector<std::pair<size_t, Outcome>>& outcomes, Outcome final);

  mutable std::mutex mu_;
  std::deque<std::string> queue_;
  std::unordered_map<std::string, Entry> entries_;
  PublishedRecords records_;
  EngineStats stats_;
  std::vector<bool> failing_;  // per socket
  std::vector<IoError> errors_;
  std::vector<SteadyClock::time_point> resting_;  // the worker's own: a failed engine is left alone for `retry`
};

EngineClient::EngineClient(Options options)
    : own_worker_(std::make_unique<LookupWorker>()), worker_(*own_worker_),
      lookups_(std::make_shared<Lookups>(std::move(options))) {
  worker_.add(lookups_);
}

EngineClient::EngineClient(Options options, LookupWorker& worker)
    : worker_(worker), lookups_(std::make_shared<Lookups>(std::move(options))) {
  worker_.add(lookups_);
}

EngineClient::~EngineClient() { worker_.remove(lookups_.get()); }

void EngineClient::want(const std::unordered_set<std::string>& ids, TimePoint now) {
  if (lookups_->want(ids, now)) worker_.notify();
}
std::shared_ptr<const RecordMap> EngineClient::records() const { return lookups_->records(); }
uint64_t EngineClient::generation() const { return lookups_->generation(); }
EngineStats EngineClient::stats() const { return lookups_->stats(); }
std::vector<IoError> EngineClient::take_errors() { return lookups_->take_errors(); }
const EngineClient::Options& EngineClient::options() const noexcept { return lookups_->options_; }

bool EngineClient::Lookups::want(const std::unordered_set<std::string>& ids, TimePoint now) {
  bool queued = false, changed = false;
  std::lock_guard lock(mu_);
  // Ids no longer live are forgotten first, making room (one still queued
  // is forgotten once answered).
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!it->second.queued && !ids.count(it->first)) {
      changed |= records_.found.erase(it->first) > 0;
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& id : ids) {
    auto it = entries_.find(id);
    if (it != entries_.end() &&
        (it->second.queued || it->second.state == LookupResult::ok || now - it->second.asked < options_.retry))
      continue;
    if (queue_.size() >= options_.max_queue) break;  // the rest at the next rescan
    if (it == entries_.end()) {
      if (entries_.size() >= options_.max_entries) break;
      it = entries_.emplace(id, Entry{}).first;
    }
    it->second.queued = true;
    it->second.asked = now;
    queue_.push_back(id);
    queued = true;
  }
  if (changed) records_.publish();
  return queued;
}

// One id, asked of each socket in turn until one knows it.
void EngineClient::Lookups::step(int cancel_fd) {
  std::string id;
  {
    std::lock_guard lock(mu_);
    if (queue_.empty()) return;
    id = std::move(queue_.front());
    queue_.pop_front();
  }
  Outcome final{LookupResult::not_found, {}, 0};
  std::vector<std::pair<size_t, Outcome>> outcomes;
  for (size_t s = 0; s < options_.sockets.size(); ++s) {
    if (SteadyClock::now() < resting_[s]) {
      final.result = LookupResult::error;
      continue;
    }
    Outcome o = lookup(options_.sockets[s], id, cancel_fd);
    if (o.err == ECANCELED) return;
    if (o.result == LookupResult::error) {
      resting_[s] = SteadyClock::now() + options_.retry;
      final.result = LookupResult::error;
    }
    const bool found = o.result == LookupResult::ok;
    outcomes.emplace_back(s, std::move(o));
    if (found) {
      final = outcomes.back().second;
      break;
    }
  }
  std::lock_guard lock(mu_);
  record_locked(id, outcomes, std::move(final));
}

void EngineClient::Lookups::record_locked(const std::string& id, const std::vector<std::pair<size_t, Outcome>>& outcomes,
                                          Outcome final) {
  for (const auto& [s, o] : outcomes) {
    ++stats_.lookups[static_cast<size_t>(o.result)];
    if (o.result == LookupResult::error && !failing_[s]) {
      failing_[s] = true;
      errors_.push_back({"ask the engine at", options_.sockets[s], o.err});
    } else if (o.result != LookupResult::error) {
      failing_[s] = false;
    }
  }
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.queued = false;
  it->second.state = final.result;
  if (final.result == LookupResult::ok) {
    records_.found[id] = std::move(final.record);
    records_.publish();
  }
}

EngineClient::Lookups::Outcome EngineClient::Lookups::lookup(const std::string& socket_path, const std::string& id,
                                                              int cancel_fd) const {
  Outcome out;
  const auto deadline = SteadyClock::now() + options_.timeout;
  const auto fail = [&](int err) {
    out.result = LookupResult::error;
    out.err = err;
    return out;
  };
  sys::UniqueFd fd;
  std::optional<HttpReply> reply;
  if (int e = connect_unix(socket_path, cancel_fd, deadline, fd)) return fail(e);
  if (int e = send_all(fd.get(), engine_inspect_request(id), cancel_fd, deadline)) return fail(e);
  if (int e = read_reply(fd.get(), cancel_fd, deadline, reply)) return fail(e);
  if (reply->status == 404) {
    out.result = LookupResult::not_found;
    return out;
  }
  std::string error;
  auto rec = reply->status == 200 ? parse_inspect(reply->body, id, error) : std::nullopt;
  if (!rec) return fail(EPROTO);
  out.result = LookupResult::ok;
  out.record = std::move(*rec);
  return out;
}

}  // namespace memcg::runtime
