#include "exporter/http/connection_gate.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "exporter/http/client_table.h"
#include "exporter/http/head.h"
#include "exporter/http/private_socket.h"
#include "exporter/http/tls_server.h"

namespace memcg::exporter {
namespace {

constexpr size_t kMaxInput = ConnectionGate::kMaxHead + ConnectionGate::kMaxBody;
constexpr size_t kMaxResponseHead = 64u << 10;  // CivetWeb's heads are a few hundred bytes
constexpr size_t kKeepCapacity = 256u << 10;    // a kept-alive connection's buffers beyond this are given back
constexpr auto kAcceptPause = std::chrono::milliseconds(100);  // after EMFILE: the backlog keeps them meanwhile
constexpr size_t kClientChunk = 16384;    // one read from a client (the head limit: a head in one read)
constexpr size_t kUpstreamChunk = 65536;  // one read of a response from CivetWeb
constexpr size_t kEventsPerWait = 256;    // epoll events taken per wake-up
// A request at a worker may take the time to write its response to a slow
// client (head_timeout) and the keep-alive pause (idle_timeout), plus this.
constexpr auto kServeGrace = std::chrono::seconds(1);
// The longest the loop sleeps while a deadline is pending: epoll_wait takes
// int milliseconds, and a deadline further than this (web.request_timeout
// and idle_timeout may be set to minutes) is checked again after it.
constexpr auto kMaxSleep = std::chrono::seconds(60);

// epoll data: the connection id (or listener index) and which socket.
enum Tag : uint64_t { kListener = 0, kClient = 1, kUpstream = 2, kWake = 3 };
uint64_t tag(uint64_t id, Tag t) { return id << 2 | t; }

std::runtime_error listen_error(const std::string& addr, const char* what, int err) {
  return std::runtime_error("cannot listen on " + addr + ": " + what + ": " + std::strerror(err));
}

bool host_has_ipv6() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ::close(fd);
  return ::access("/proc/net/if_inet6", F_OK) == 0;
}

// One listening socket for a web.listen entry (validated by the config).
sys::UniqueFd bind_listener(const std::string& addr, ListenPort& port) {
  const size_t colon = addr.rfind(':');
  std::string host = addr.substr(0, colon);
  const std::string service = addr.substr(colon + 1);
  const bool any = host.empty();
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  // ":PORT": every address; with IPv6, one dual-stack socket on [::].
  const bool dual = any && host_has_ipv6();
  hints.ai_family = any ? (dual ? AF_INET6 : AF_INET) : AF_UNSPEC;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(any ? nullptr : host.c_str(), service.c_str(), &hints, &res); rc != 0 || !res)
    throw std::runtime_error("cannot listen on " + addr + ": " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, ::freeaddrinfo);
  sys::UniqueFd fd(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw listen_error(addr, "socket", errno);
  const int one = 1, zero = 0;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (res->ai_family == AF_INET6)
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, dual ? &zero : &one, sizeof one);
  if (::bind(fd.get(), res->ai_addr, res->ai_addrlen) != 0) throw listen_error(addr, "bind", errno);
  if (::listen(fd.get(), SOMAXCONN) != 0) throw listen_error(addr, "listen", errno);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  port.port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                                : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  port.ipv6 = dual;
  return fd;
}

//   handshake  TLS handshake in progress
//   head       reading a request (idle: kept alive, nothing of it yet)
//   queued     the request is whole, waiting for a worker
//   serving    at a worker: relayed upstream, its response coming back
//   writing    the worker is done; the rest of the response goes out
//   closing    response sent, write side shut: reading out what the client sends
enum class State { handshake, head, queued, serving, writing, closing };

struct Conn {
  uint64_t id = 0;
  ClientKey key;
  sys::UniqueFd client, upstream;
  std::unique_ptr<TlsSession> tls;
  State state = State::head;
  bool idle = false;
  TimePoint deadline, since;  // since: accepted, or the last response sent (eviction picks the oldest)
  bool client_eof = false, keep_alive = false, is_head = false, close_after = false, response_head = false;
  std::string in;                      // from the client, not yet relayed
  std::string up;                      // the request for CivetWeb
  size_t up_off = 0;
  std::string raw;                     // CivetWeb's response before its head is complete
  std::string out;                     // for the client
  size_t out_off = 0;
  uint32_t client_events = 0, upstream_events = 0;  // what epoll watches now
  size_t pending() const noexcept { return out.size() - out_off; }
  bool waiting() const noexcept { return state == State::handshake || state == State::head; }
};

}  // namespace

struct ConnectionGate::Loop {
  GateOptions o;
  GateStats& stats;
  Clock& clock;  // every deadline; tests drive it with a ManualClock
  std::vector<sys::UniqueFd> listeners;
  sys::UniqueFd epoll{::epoll_create1(EPOLL_CLOEXEC)};
  sys::UniqueFd wake{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  const PrivateSocket* upstream = nullptr;
  std::mutex tls_mu;  // guards tls only
  std::shared_ptr<SSL_CTX> tls;
  std::atomic<bool> stop{false};
  ClientTable table;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  uint64_t next_id = 1;
  size_t buffered = 0;  // response bytes held for clients, all connections
  TimePoint accept_paused_until{};
  bool accept_paused = false;

  Loop(GateOptions opts, GateStats& s, Clock& c)
      : o(std::move(opts)), stats(s), clock(c), table(o.max_open, o.max_per_client, o.workers) {}

  void watch(int fd, uint64_t data, uint32_t events, int op = EPOLL_CTL_ADD) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = data;
    ::epoll_ctl(epoll.get(), op, fd, &ev);
  }

  void set_listening(bool on) {
    for (size_t i = 0; i < listeners.size(); ++i) {
      if (on) watch(listeners[i].get(), tag(i, kListener), EPOLLIN);
      else ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, listeners[i].get(), nullptr);
    }
  }

  std::shared_ptr<SSL_CTX> current_tls() {
    std::lock_guard lock(tls_mu);
    return tls;
  }

  void publish() {
    stats.relayed.store(table.served(), std::memory_order_relaxed);
    stats.waiting.store(table.open() - table.served(), std::memory_order_relaxed);
    stats.buffered_bytes.store(buffered, std::memory_order_relaxed);
  }

  void close_conn(Conn& c) {
    table.release(c.key, c.id, c.state == State::serving);
    buffered -= c.pending();
    conns.erase(c.id);  // closes both sockets, which leaves the epoll set
  }

  // --- accepting -------------------------------------------------------

  // Every connection is taken: the oldest waiting connection of the client
  // holding the most goes, if that client holds more than `key`'s would.
  bool evict_for(const ClientKey& key) {
    Conn* victim = nullptr;
    size_t most = table.open_of(key) + 1;
    for (auto& [id, c] : conns) {
      if (!c->waiting()) continue;
      const size_t n = table.open_of(c->key);
      if (n > most || (victim && n == most && c->key == victim->key && c->since < victim->since)) {
        victim = c.get();
        most = n;
      }
    }
    if (!victim) return false;
    stats.evicted.fetch_add(1, std::memory_order_relaxed);
    close_conn(*victim);
    return true;
  }

  void accept_from(int lfd) {
    for (;;) {
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      const int fd = ::accept4(lfd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: stop accepting for a moment rather than spin
          // on a listener that stays readable.
          set_listening(false);
          accept_paused = true;
          accept_paused_until = clock.now() + kAcceptPause;
        }
        return;
      }
      sys::UniqueFd sock(fd);
      const ClientKey key = client_key(peer);
      Refusal r = table.admit(key);
      if (r == Refusal::total && evict_for(key)) r = table.admit(key);
      if (r == Refusal::per_client) stats.refused_per_client.fetch_add(1, std::memory_order_relaxed);
      if (r == Refusal::total) stats.refused_total.fetch_add(1, std::memory_order_relaxed);
      if (r != Refusal::none) continue;
      stats.accepted.fetch_add(1, std::memory_order_relaxed);
      open_conn(std::move(sock), key);
    }
  }

  void open_conn(sys::UniqueFd sock, const ClientKey& key) {
    auto c = std::make_unique<Conn>();
    c->id = next_id++;
    c->key = key;
    c->client = std::move(sock);
    c->since = clock.now();
    c->deadline = c->since + o.head_timeout;
    if (auto ctx = current_tls()) {
      c->tls = std::make_unique<TlsSession>(ctx, c->client.get());
      c->state = State::handshake;
    }
    watch(c->client.get(), tag(c->id, kClient), 0);
    Conn& ref = *c;
    conns.emplace(c->id, std::move(c));
    pump(ref);
  }

  // --- the client side -------------------------------------------------

  // Reads what the client sent into c.in (up to kMaxInput); false when the
  // connection is broken and was closed.
  bool read_client(Conn& c) {
    while (!c.client_eof && c.in.size() < kMaxInput) {
      char buf[kClientChunk];
      const size_t want = std::min(sizeof buf, kMaxInput - c.in.size());
      const ssize_t n = c.tls ? c.tls->read(buf, want) : ::recv(c.client.get(), buf, want, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        stats.bytes_received.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      } else if (n == 0) {
        c.client_eof = true;
      } else if (c.tls ? c.tls->failed() : (errno != EAGAIN && errno != EINTR)) {
        close_conn(c);
        return false;
      } else {
        break;
      }
    }
    return true;
  }

  // Writes what is pending for the client; false when closed.
  bool write_client(Conn& c) {
    bool progressed = false;
    while (c.pending() > 0) {
      const size_t len = std::min(c.pending(), kRelayChunk);
      const ssize_t n = c.tls ? c.tls->write(c.out.data() + c.out_off, len)
                              : ::send(c.client.get(), c.out.data() + c.out_off, len, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_off += static_cast<size_t>(n);
        buffered -= static_cast<size_t>(n);
        stats.bytes_sent.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
        progressed = true;
      } else if (n < 0 && !c.tls && errno == EINTR) {
        continue;
      } else if (n < 0 && (c.tls ? !c.tls->failed() : errno == EAGAIN)) {
        break;
      } else {
        close_conn(c);
        return false;
      }
    }
    if (progressed && c.state != State::serving) c.deadline = clock.now() + o.head_timeout;
    if (c.pending() == 0) {
      c.out.clear();
      c.out_off = 0;
      if (c.out.capacity() > kKeepCapacity) std::string().swap(c.out);
    }
    return true;
  }

  // A request of c.in is whole: queued for a worker, or refused by the gate.
  void take_request(Conn& c) {
    if (c.idle && !c.in.empty()) {  // the next request began: it has the head timeout from here
      c.idle = false;
      c.deadline = clock.now() + o.head_timeout;
    }
    const HeadCheck check = check_request(c.in, kMaxHead, kMaxBody);
    if (check.status == HeadCheck::Status::incomplete ||
        (check.status == HeadCheck::Status::ok && c.in.size() < check.head.total()))
      return;
    if (check.status == HeadCheck::Status::refused) {
      c.in.clear();
      respond_from_gate(c, check.code, check.reason);
      return;
    }
    const RequestHead& h = check.head;
    c.up = upstream_head(std::string_view(c.in).substr(h.skipped, h.head_len));
    c.up.append(c.in, h.skipped + h.head_len, h.body_len);
    c.up_off = 0;
    c.in.erase(0, h.total());
    c.keep_alive = h.keep_alive;
    c.is_head = h.is_head;
    c.response_head = false;
    c.close_after = false;
    c.state = State::queued;
    c.deadline = clock.now() + o.head_timeout;
    table.ready(c.key, c.id);
  }

  void respond_from_gate(Conn& c, int code, const std::string& reason) {
    const std::string r = gate_response(code, reason);
    c.out.append(r);
    buffered += r.size();
    c.close_after = true;
    c.state = State::writing;
    c.deadline = clock.now() + o.head_timeout;
  }

  // The response is out: the next request (kept alive), or closing. A
  // client that half-closed after pipelining still has its whole requests
  // answered, one by one; closing comes when none is left.
  void finish_response(Conn& c) {
    c.raw.clear();
    c.up.clear();
    if (c.up.capacity() > kKeepCapacity) std::string().swap(c.up);
    if (c.close_after || !c.keep_alive || (c.client_eof && c.in.empty())) {
      start_closing(c);
      return;
    }
    c.state = State::head;
    c.idle = c.in.empty();
    c.since = clock.now();
    c.deadline = c.since + (c.idle ? o.idle_timeout : o.head_timeout);
  }

  // Shuts the write side and reads out what the client still sends, so
  // that closing does not reset the response's tail on its way.
  void start_closing(Conn& c) {
    if (c.tls) c.tls->shutdown();
    ::shutdown(c.client.get(), SHUT_WR);
    c.state = State::closing;
    c.in.clear();
    c.deadline = clock.now() + kLinger;
  }

  // Reads out and drops what a closing client sends; closes at its end.
  void drain_closing(Conn& c) {
    for (;;) {
      char buf[kClientChunk];
      const ssize_t n = ::recv(c.client.get(), buf, sizeof buf, 0);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return update_interest(c);
      return close_conn(c);
    }
  }

  // Moves one connection on as far as it can go without blocking.
  // `hangup`: the client's FIN was reported (read it in any state).
  void pump(Conn& c, bool hangup = false) {
    if (c.state == State::handshake) {
      if (!c.tls->handshake()) {
        if (c.tls->failed()) return close_conn(c);
        return update_interest(c);
      }
      c.state = State::head;
    }
    if (c.state == State::closing) return drain_closing(c);
    if ((c.state == State::head || hangup) && !read_client(c)) return;
    if (c.state == State::head) {
      take_request(c);
      if (c.state == State::head && c.client_eof) return close_conn(c);  // gone before a whole request
    }
    if (c.pending() > 0 && !write_client(c)) return;
    if (c.state == State::writing && c.pending() == 0) {
      finish_response(c);
      if (c.state == State::closing) return drain_closing(c);
      if (!c.in.empty() || (c.tls && c.tls->pending())) return pump(c);  // a pipelined request, already here
    }
    update_interest(c);
  }

  void update_interest(Conn& c) {
    const bool room = !c.client_eof && c.in.size() < kMaxInput;
    uint32_t ce = room ? static_cast<uint32_t>(EPOLLRDHUP) : 0u;
    if ((c.state == State::head || c.state == State::closing) && room) ce |= EPOLLIN;
    if (c.pending() > 0) ce |= EPOLLOUT;
    if (c.tls && c.tls->want() == TlsSession::Want::read) ce |= EPOLLIN;
    if (c.tls && c.tls->want() == TlsSession::Want::write) ce |= EPOLLOUT;
    if (ce != c.client_events) {
      c.client_events = ce;
      watch(c.client.get(), tag(c.id, kClient), ce, EPOLL_CTL_MOD);
    }
    if (!c.upstream.valid()) return;
    uint32_t ue = 0;
    if (c.up_off < c.up.size()) ue |= EPOLLOUT;
    if (may_read_upstream(c)) ue |= EPOLLIN;
    // Not watched at all while it may not be read: a hang-up would be
    // reported over and over, level-triggered, with nothing to do about it.
    if (ue == c.upstream_events) return;
    if (ue == 0) ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, c.upstream.get(), nullptr);
    else watch(c.upstream.get(), tag(c.id, kUpstream), ue, c.upstream_events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD);
    c.upstream_events = ue;
  }

  // --- the upstream side -----------------------------------------------

  bool may_read_upstream(const Conn& c) const noexcept { return c.pending() < kRelayChunk || buffered < kMaxBuffered; }
  Duration serve_timeout() const { return o.head_timeout + o.idle_timeout + kServeGrace; }

  void start_requests() {
    while (auto id = table.next()) {
      auto it = conns.find(*id);
      if (it == conns.end()) continue;  // not reached: a closed connection leaves the queue
      Conn& c = *it->second;
      c.upstream = upstream->connect();
      if (!c.upstream.valid()) {
        table.finish(c.key);
        respond_from_gate(c, 503, "the web server takes no connection now");
        pump(c);
        continue;
      }
      c.state = State::serving;
      c.deadline = clock.now() + serve_timeout();
      c.upstream_events = 0;
      relay_upstream(c);
    }
  }

  // Appends what CivetWeb sent: the head, once whole, with the client's own
  // keep-alive; the body as it comes. False when the response is broken.
  bool take_response(Conn& c, const char* data, size_t n) {
    if (c.response_head) {
      c.out.append(data, n);
      buffered += n;
      return true;
    }
    c.raw.append(data, n);
    const ResponseHead h = find_response_head(c.raw, c.is_head);
    if (h.head_len == 0) return c.raw.size() <= kMaxResponseHead;
    c.response_head = true;
    c.close_after = !h.delimited;
    const size_t before = c.out.size();
    c.out.append(client_head(std::string_view(c.raw).substr(0, h.head_len), c.keep_alive && h.delimited));
    c.out.append(c.raw, h.head_len);
    buffered += c.out.size() - before;
    c.raw.clear();
    return true;
  }

  // The worker is done (CivetWeb closed its end): the response goes out.
  void upstream_done(Conn& c) {
    c.upstream.reset();
    c.upstream_events = 0;
    table.finish(c.key);
    c.state = State::writing;
    c.deadline = clock.now() + o.head_timeout;
    if (!c.response_head) {
      c.raw.clear();
      respond_from_gate(c, 502, "the web server gave no response");
    }
  }

  void relay_upstream(Conn& c) {
    bool progressed = false, done = false;
    while (c.up_off < c.up.size()) {
      const ssize_t w = ::send(c.upstream.get(), c.up.data() + c.up_off, c.up.size() - c.up_off, MSG_NOSIGNAL);
      if (w > 0) c.up_off += static_cast<size_t>(w), progressed = true;
      else if (w < 0 && errno == EINTR) continue;
      else {
        done = !(w < 0 && errno == EAGAIN);
        break;
      }
    }
    while (!done && may_read_upstream(c)) {
      char buf[kUpstreamChunk];
      const ssize_t n = ::recv(c.upstream.get(), buf, sizeof buf, 0);
      if (n > 0) {
        progressed = true;
        if (!take_response(c, buf, static_cast<size_t>(n))) done = true;  // no head: upstream_done answers 502
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        done = !(n < 0 && errno == EAGAIN);
        break;
      }
    }
    if (progressed) c.deadline = clock.now() + serve_timeout();
    if (done) upstream_done(c);
    pump(c);
  }

  // --- time ------------------------------------------------------------

  void expire(Conn& c) {
    switch (c.state) {
      case State::handshake:
      case State::head:
        if (!c.idle) stats.head_timeouts.fetch_add(1, std::memory_order_relaxed);
        return close_conn(c);
      case State::queued:
        table.cancel(c.key, c.id);
        respond_from_gate(c, 503, "no worker was free within web.request_timeout");
        return pump(c);
      default: return close_conn(c);
    }
  }

  void sweep(TimePoint now) {
    if (accept_paused && now >= accept_paused_until) {
      set_listening(true);
      accept_paused = false;
    }
    std::vector<uint64_t> expired;
    for (auto& [id, c] : conns)
      if (now >= c->deadline) expired.push_back(id);
    for (uint64_t id : expired)
      if (auto it = conns.find(id); it != conns.end()) expire(*it->second);
  }

  // When the loop must wake without an event: the earliest deadline of a
  // connection, or the end of an accept pause. With nothing open it sleeps
  // until a connection comes: an idle exporter costs no wake-ups here.
  TimePoint wake_at() const {
    TimePoint t = accept_paused ? accept_paused_until : TimePoint::max();
    for (const auto& [id, c] : conns) t = std::min(t, c->deadline);
    return t;
  }

  void on_event(uint64_t data, uint32_t ev) {
    const auto t = static_cast<Tag>(data & 3);
    const uint64_t id = data >> 2;
    if (t == kWake) return;
    if (t == kListener) {
      if (id < listeners.size()) accept_from(listeners[id].get());
      return;
    }
    auto it = conns.find(id);
    if (it == conns.end()) return;  // closed earlier in this batch
    Conn& c = *it->second;
    if (t == kUpstream) return c.upstream.valid() ? relay_upstream(c) : void();
    if (ev & (EPOLLHUP | EPOLLERR)) return close_conn(c);  // reset, or both directions closed: in every state
    pump(c, (ev & EPOLLRDHUP) != 0);
  }

  void run() {
    watch(wake.get(), tag(0, kWake), EPOLLIN);
    set_listening(true);
    std::vector<epoll_event> events(kEventsPerWait);
    while (!stop.load()) {
      const auto due = wake_at();
      int timeout = -1;
      if (due != TimePoint::max()) {
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(due - clock.now()).count();
        timeout = static_cast<int>(std::clamp<int64_t>(ms, 0, std::chrono::milliseconds(kMaxSleep).count()));
      }
      const bool over_budget = buffered >= kMaxBuffered;
      const int n = ::epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()), timeout);
      for (int i = 0; i < n; ++i) on_event(events[static_cast<size_t>(i)].data.u64, events[static_cast<size_t>(i)].events);
      if (over_budget && buffered < kMaxBuffered)  // responses held back for the budget may flow again
        for (auto& [id, c] : conns)
          if (c->state == State::serving) update_interest(*c);
      start_requests();
      if (const auto now = clock.now(); now >= due) {
        sweep(now);
        start_requests();
      }
      publish();
    }
  }
};

ConnectionGate::ConnectionGate(GateOptions o, GateStats& stats, Clock& clock)
    : loop_(std::make_unique<Loop>(std::move(o), stats, clock)) {
  if (!loop_->epoll.valid() || !loop_->wake.valid())
    throw std::runtime_error(std::string("cannot set up the connection gate: ") + std::strerror(errno));
  for (const auto& addr : loop_->o.listen) {
    ListenPort p;
    loop_->listeners.push_back(bind_listener(addr, p));
    ports_.push_back(p);
  }
}

void ConnectionGate::start(const PrivateSocket& upstream, std::shared_ptr<SSL_CTX> tls) {
  loop_->upstream = &upstream;
  set_tls(std::move(tls));
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { loop_->run(); });
  clockid_t clock{};
  if (::pthread_getcpuclockid(thread_.native_handle(), &clock) == 0) {
    loop_->stats.cpu_clock.store(clock);
    loop_->stats.cpu_clock_set.store(true, std::memory_order_release);
  }
}

void ConnectionGate::set_tls(std::shared_ptr<SSL_CTX> tls) {
  std::lock_guard lock(loop_->tls_mu);
  loop_->tls = std::move(tls);
}

ConnectionGate::~ConnectionGate() {
  (void)loop_->stats.cpu_ns();  // the last reading stays
  loop_->stats.cpu_clock_set.store(false);
  loop_->stop.store(true);
  const uint64_t one = 1;
  (void)::write(loop_->wake.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

uint64_t ConnectionGate::fd_reserve(const GateOptions& o) noexcept {
  return 2 * o.listen.size() + o.max_open + 2 * o.workers + 3;  // + epoll, eventfd, CivetWeb's listener
}

}  // namespace memcg::exporter
