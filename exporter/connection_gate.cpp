#include "exporter/connection_gate.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "exporter/client_table.h"

namespace memcg::exporter {
namespace {

using Steady = std::chrono::steady_clock;

constexpr size_t kRelayBuffer = 64 * 1024;
constexpr size_t kMaxHead = 16384;  // CivetWeb's max_request_size: a longer head is its to refuse
constexpr auto kAcceptPause = std::chrono::milliseconds(100);  // after EMFILE: the backlog keeps them meanwhile

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

// Whether what a client sent so far is a whole request head (or as much as
// CivetWeb would read of one), or for TLS, the whole first record.
bool head_complete(std::string_view b, bool tls) noexcept {
  if (b.size() >= kMaxHead) return true;
  if (tls) {
    if (b.empty()) return false;
    if (static_cast<unsigned char>(b[0]) != 0x16) return true;  // not a TLS handshake: CivetWeb answers it
    if (b.size() < 5) return false;
    const size_t len = static_cast<size_t>(static_cast<unsigned char>(b[3])) << 8 | static_cast<unsigned char>(b[4]);
    return b.size() >= 5 + len;
  }
  return b.find("\r\n\r\n") != std::string_view::npos || b.find("\n\n") != std::string_view::npos;
}

enum class State { head, queued, relay };

struct Conn {
  uint64_t id = 0;
  ClientKey key;
  sys::UniqueFd client, upstream;
  State state = State::head;
  Steady::time_point deadline;
  // Relay: a buffer per direction, refilled only once emptied.
  std::unique_ptr<char[]> to_up, to_client;
  size_t up_off = 0, up_len = 0, client_off = 0, client_len = 0;
  bool client_eof = false, upstream_eof = false, connecting = false;
  uint32_t client_events = 0, upstream_events = 0;  // what epoll watches now
};

}  // namespace

struct ConnectionGate::Loop {
  GateOptions o;
  GateStats& stats;
  std::vector<sys::UniqueFd> listeners;
  sys::UniqueFd epoll{::epoll_create1(EPOLL_CLOEXEC)};
  sys::UniqueFd wake{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  std::atomic<int> upstream_port{0};
  std::atomic<bool> tls{false};
  std::atomic<bool> stop{false};
  ClientTable table;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  uint64_t next_id = 1;
  Steady::time_point accept_paused_until{};
  bool accept_paused = false;
  std::vector<char> peek = std::vector<char>(kMaxHead);

  Loop(GateOptions opts, GateStats& s)
      : o(std::move(opts)), stats(s), table(o.max_open, o.max_per_client, o.workers) {}

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

  void publish() {
    stats.relayed.store(table.served(), std::memory_order_relaxed);
    stats.waiting.store(table.open() - table.served(), std::memory_order_relaxed);
  }

  void close_conn(Conn& c) {
    table.release(c.key, c.id, c.state == State::relay);
    conns.erase(c.id);  // closes both sockets, which leaves the epoll set
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
          accept_paused_until = Steady::now() + kAcceptPause;
        }
        return;
      }
      sys::UniqueFd sock(fd);
      const ClientKey key = client_key(peer);
      switch (table.admit(key)) {
        case Refusal::per_client: stats.refused_per_client.fetch_add(1, std::memory_order_relaxed); continue;
        case Refusal::total: stats.refused_total.fetch_add(1, std::memory_order_relaxed); continue;
        case Refusal::none: break;
      }
      stats.accepted.fetch_add(1, std::memory_order_relaxed);
      auto c = std::make_unique<Conn>();
      c->id = next_id++;
      c->key = key;
      c->client = std::move(sock);
      c->deadline = Steady::now() + o.head_timeout;
      // Edge-triggered while the head arrives: the bytes are only peeked at,
      // so a level-triggered fd would stay ready and spin.
      c->client_events = EPOLLIN | EPOLLRDHUP | EPOLLET;
      watch(c->client.get(), tag(c->id, kClient), c->client_events);
      conns.emplace(c->id, std::move(c));
    }
  }

  void check_head(Conn& c) {
    const ssize_t n = ::recv(c.client.get(), peek.data(), peek.size(), MSG_PEEK);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return close_conn(c);
    if (n < 0 || !head_complete({peek.data(), static_cast<size_t>(n)}, tls.load())) return;
    c.state = State::queued;
    // Ready for a worker; only a hang-up is watched until one is free (a
    // client may half-close after its request, which is not a reason to drop it).
    c.client_events = 0;
    watch(c.client.get(), tag(c.id, kClient), 0, EPOLL_CTL_MOD);
    c.deadline = Steady::now() + o.head_timeout + std::chrono::seconds(60);
    table.ready(c.key, c.id);
  }

  void start_relays() {
    while (auto id = table.next()) {
      auto it = conns.find(*id);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      c.state = State::relay;
      sockaddr_in up{};
      up.sin_family = AF_INET;
      up.sin_port = htons(static_cast<uint16_t>(upstream_port.load()));
      up.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      c.upstream = sys::UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!c.upstream.valid() ||
          (::connect(c.upstream.get(), reinterpret_cast<sockaddr*>(&up), sizeof up) != 0 && errno != EINPROGRESS)) {
        close_conn(c);
        continue;
      }
      const int one = 1;
      ::setsockopt(c.upstream.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      c.connecting = true;
      c.to_up = std::make_unique<char[]>(kRelayBuffer);
      c.to_client = std::make_unique<char[]>(kRelayBuffer);
      c.deadline = Steady::now() + relay_idle();
      c.upstream_events = 0;
      watch(c.upstream.get(), tag(c.id, kUpstream), 0);
      update_interest(c);
    }
  }

  // A relayed connection moving no byte for this long is dropped: CivetWeb
  // closes idle keep-alive connections well before (web.idle_timeout), and
  // a client that stopped reading its response would otherwise stay forever.
  Duration relay_idle() const { return o.head_timeout + o.idle_timeout + std::chrono::seconds(1); }

  void update_interest(Conn& c) {
    uint32_t ce = 0, ue = 0;
    if (!c.client_eof && c.up_len == 0) ce |= EPOLLIN | EPOLLRDHUP;
    if (c.client_len > 0) ce |= EPOLLOUT;
    if (c.client_len == 0 && !c.connecting && !c.upstream_eof) ue |= EPOLLIN;
    if (c.up_len > 0 || c.connecting) ue |= EPOLLOUT;
    if (ce != c.client_events) {
      c.client_events = ce;
      watch(c.client.get(), tag(c.id, kClient), ce, EPOLL_CTL_MOD);
    }
    if (ue != c.upstream_events) {
      c.upstream_events = ue;
      watch(c.upstream.get(), tag(c.id, kUpstream), ue, EPOLL_CTL_MOD);
    }
  }

  // Writes what is buffered; false when the connection must close.
  static bool flush(int fd, const char* buf, size_t& off, size_t& len, bool& progressed) {
    while (off < len) {
      const ssize_t w = ::send(fd, buf + off, len - off, MSG_NOSIGNAL);
      if (w > 0) {
        off += static_cast<size_t>(w);
        progressed = true;
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else {
        return w < 0 && errno == EAGAIN;
      }
    }
    off = len = 0;
    return true;
  }

  void relay(Conn& c, Tag side, uint32_t events) {
    bool progressed = false;
    if (side == kUpstream && c.connecting && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.upstream.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return close_conn(c);
      c.connecting = false;
    }
    if (side == kClient && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && !c.client_eof && c.up_len == 0) {
      const ssize_t n = ::recv(c.client.get(), c.to_up.get(), kRelayBuffer, 0);
      if (n > 0) {
        c.up_len = static_cast<size_t>(n);
        progressed = true;
      } else if (n == 0) {
        c.client_eof = true;
      } else if (errno != EAGAIN && errno != EINTR) {
        return close_conn(c);
      }
    }
    if (side == kUpstream && !c.connecting && !c.upstream_eof && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c.client_len == 0) {
      const ssize_t n = ::recv(c.upstream.get(), c.to_client.get(), kRelayBuffer, 0);
      if (n > 0) {
        c.client_len = static_cast<size_t>(n);
        progressed = true;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        // CivetWeb closed the connection (keep-alive over, Connection: close,
        // an error): the exchange is over once the client has the rest.
        c.upstream_eof = true;
      }
    }
    if (!c.connecting && !flush(c.upstream.get(), c.to_up.get(), c.up_off, c.up_len, progressed)) return close_conn(c);
    if (!flush(c.client.get(), c.to_client.get(), c.client_off, c.client_len, progressed)) return close_conn(c);
    if (c.upstream_eof && c.client_len == 0) return close_conn(c);
    if (c.client_eof && c.up_len == 0 && !c.connecting) ::shutdown(c.upstream.get(), SHUT_WR);  // the request is all sent
    if (progressed) c.deadline = Steady::now() + relay_idle();
    update_interest(c);
  }

  void sweep(Steady::time_point now) {
    if (accept_paused && now >= accept_paused_until) {
      set_listening(true);
      accept_paused = false;
    }
    std::vector<uint64_t> expired;
    for (auto& [id, c] : conns)
      if (now >= c->deadline) expired.push_back(id);
    for (uint64_t id : expired) {
      Conn& c = *conns.at(id);
      if (c.state == State::head) stats.head_timeouts.fetch_add(1, std::memory_order_relaxed);
      close_conn(c);
    }
  }

  // When the loop must wake without an event: the earliest deadline of a
  // connection, or the end of an accept pause. With nothing open it sleeps
  // until a connection comes: an idle exporter costs no wake-ups here.
  Steady::time_point wake_at() const {
    Steady::time_point t = accept_paused ? accept_paused_until : Steady::time_point::max();
    for (const auto& [id, c] : conns) t = std::min(t, c->deadline);
    return t;
  }

  void run() {
    watch(wake.get(), tag(0, kWake), EPOLLIN);
    set_listening(true);
    std::vector<epoll_event> events(256);
    while (!stop.load()) {
      const auto due = wake_at();
      int timeout = -1;
      if (due != Steady::time_point::max()) {
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(due - Steady::now()).count();
        timeout = static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
      }
      const int n = ::epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()), timeout);
      for (int i = 0; i < n; ++i) {
        const uint64_t data = events[static_cast<size_t>(i)].data.u64;
        const uint32_t ev = events[static_cast<size_t>(i)].events;
        const auto t = static_cast<Tag>(data & 3);
        const uint64_t id = data >> 2;
        if (t == kWake) continue;
        if (t == kListener) {
          if (id < listeners.size()) accept_from(listeners[id].get());
          continue;
        }
        auto it = conns.find(id);
        if (it == conns.end()) continue;  // closed earlier in this batch
        Conn& c = *it->second;
        switch (c.state) {
          case State::head:
            if (ev & (EPOLLHUP | EPOLLERR)) close_conn(c);
            else check_head(c);
            break;
          case State::queued:
            if (ev & (EPOLLHUP | EPOLLERR)) close_conn(c);
            break;
          case State::relay: relay(c, t, ev); break;
        }
      }
      start_relays();
      if (const auto now = Steady::now(); now >= due) {
        sweep(now);
        start_relays();
      }
      publish();
    }
  }
};

ConnectionGate::ConnectionGate(GateOptions o, GateStats& stats) : loop_(std::make_unique<Loop>(std::move(o), stats)) {
  if (!loop_->epoll.valid() || !loop_->wake.valid())
    throw std::runtime_error(std::string("cannot set up the connection gate: ") + std::strerror(errno));
  for (const auto& addr : loop_->o.listen) {
    ListenPort p;
    loop_->listeners.push_back(bind_listener(addr, p));
    ports_.push_back(p);
  }
}

void ConnectionGate::start(int upstream_port, bool tls) {
  loop_->tls.store(tls);
  loop_->upstream_port.store(upstream_port);
  if (!thread_.joinable()) thread_ = std::thread([this] { loop_->run(); });
}

ConnectionGate::~ConnectionGate() {
  loop_->stop.store(true);
  const uint64_t one = 1;
  (void)::write(loop_->wake.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

uint64_t ConnectionGate::fd_reserve(const GateOptions& o) noexcept {
  return 2 * o.listen.size() + o.max_open + 2 * o.workers + 3;  // + epoll, eventfd, CivetWeb's listener
}

}  // namespace memcg::exporter
