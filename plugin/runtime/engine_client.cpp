#include "plugin/runtime/engine_client.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "plugin/runtime/engine_api.h"

namespace memcg::runtime {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events`, the deadline passes (ETIMEDOUT) or
// the client stops (ECANCELED). 0 when ready.
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

}  // namespace

EngineClient::EngineClient(Options options)
    : options_(std::move(options)), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), failing_(options_.sockets.size()) {
  worker_ = std::thread([this] { run(); });
}

EngineClient::~EngineClient() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  const uint64_t one = 1;
  if (wake_.valid()) (void)!::write(wake_.get(), &one, sizeof one);
  worker_.join();
}

void EngineClient::want(const std::unordered_set<std::string>& ids, TimePoint now) {
  bool queued = false, changed = false;
  {
    std::lock_guard lock(mu_);
    // Ids no longer live are forgotten first, making room (one still queued
    // is forgotten once answered).
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (!it->second.queued && !ids.count(it->first)) {
        changed |= found_.erase(it->first) > 0;
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
    if (changed) publish_locked();
  }
  if (queued) cv_.notify_one();
}

std::shared_ptr<const RecordMap> EngineClient::records() const {
  std::lock_guard lock(mu_);
  return published_;
}

uint64_t EngineClient::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

EngineStats EngineClient::stats() const {
  std::lock_guard lock(mu_);
  EngineStats s = stats_;
  s.cached = found_.size();
  return s;
}

std::vector<IoError> EngineClient::take_errors() {
  std::lock_guard lock(mu_);
  return std::exchange(errors_, {});
}

void EngineClient::publish_locked() {
  published_ = std::make_shared<const RecordMap>(found_);
  ++generation_;
}

void EngineClient::run() {
  std::vector<SteadyClock::time_point> resting(options_.sockets.size());  // a failed engine is left alone for `retry`
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const std::string id = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();

    Outcome final{LookupResult::not_found, {}, 0};
    std::vector<std::pair<size_t, Outcome>> outcomes;
    for (size_t s = 0; s < options_.sockets.size(); ++s) {
      if (SteadyClock::now() < resting[s]) {
        final.result = LookupResult::error;
        continue;
      }
      Outcome o = lookup(options_.sockets[s], id);
      if (o.err == ECANCELED) return;
      if (o.result == LookupResult::error) {
        resting[s] = SteadyClock::now() + options_.retry;
        final.result = LookupResult::error;
      }
      const bool found = o.result == LookupResult::ok;
      outcomes.emplace_back(s, std::move(o));
      if (found) {
        final = outcomes.back().second;
        break;
      }
    }

    lock.lock();
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
    if (it == entries_.end()) continue;
    it->second.queued = false;
    it->second.state = final.result;
    if (final.result == LookupResult::ok) {
      found_[id] = std::move(final.record);
      publish_locked();
    }
  }
}

EngineClient::Outcome EngineClient::lookup(const std::string& socket_path, const std::string& id) {
  Outcome out;
  const auto deadline = SteadyClock::now() + options_.timeout;
  const auto fail = [&](int err) {
    out.result = LookupResult::error;
    out.err = err;
    return out;
  };
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return fail(ENAMETOOLONG);
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail(errno);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) return fail(errno);
    if (int e = wait_ready(fd.get(), POLLOUT, wake_.get(), deadline)) return fail(e);
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) return fail(errno);
    if (soerr != 0) return fail(soerr);
  }
  const std::string request = engine_inspect_request(id);
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      if (int e = wait_ready(fd.get(), POLLOUT, wake_.get(), deadline)) return fail(e);
    } else {
      return fail(n < 0 ? errno : EPIPE);
    }
  }
  // The reply: read until it is complete by its own framing or the engine
  // closes; never more than a reply may be (headers get 64 KiB on top).
  std::string raw, error;
  char buf[16384];
  std::optional<HttpReply> reply;
  for (bool eof = false; !reply;) {
    if (!eof) {
      if (int e = wait_ready(fd.get(), POLLIN, wake_.get(), deadline)) return fail(e);
      const ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) return fail(errno);
      if (n == 0) eof = true;
      raw.append(buf, static_cast<size_t>(n));
      if (raw.size() > kMaxEngineReplyBytes + 64 * 1024) return fail(EMSGSIZE);
    }
    reply = parse_http_reply(raw, eof, error);
    if (!reply && (!error.empty() || eof)) return fail(EPROTO);
  }
  if (reply->status == 404) {
    out.result = LookupResult::not_found;
    return out;
  }
  if (reply->status != 200) return fail(EPROTO);
  auto rec = parse_inspect(reply->body, id, error);
  if (!rec) return fail(EPROTO);
  out.result = LookupResult::ok;
  out.record = std::move(*rec);
  return out;
}

}  // namespace memcg::runtime
