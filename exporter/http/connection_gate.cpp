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
#include <set>
#include <unordered_map>

#include "exporter/http/client_table.h"
#include "exporter/http/head.h"
#include "exporter/http/response_budget.h"
#include "exporter/http/tls_server.h"

namespace memcg::exporter {
namespace {

constexpr size_t kMaxInput = ConnectionGate::kMaxHead + ConnectionGate::kMaxBody;
constexpr size_t kKeepCapacity = 256u << 10;    // a kept-alive connection's buffers beyond this are given back
constexpr auto kAcceptPause = std::chrono::milliseconds(100);  // after EMFILE: the backlog keeps them meanwhile
constexpr size_t kClientChunk = 16384;    // one read from a client (the head limit: a head in one read)
constexpr size_t kEventsPerWait = 256;    // epoll events taken per wake-up
constexpr size_t kWriteChunk = 64u << 10;  // one write to a client
constexpr size_t kAcceptsPerWake = 64;     // per listener and turn of the loop
constexpr auto kPeekAgain = std::chrono::milliseconds(20);  // a ClientHello header that came in parts
// A request at a worker may take the time to write its response to a slow
// client (head_timeout) and the keep-alive pause (idle_timeout), plus this.
constexpr auto kServeGrace = std::chrono::seconds(1);
// The longest the loop sleeps while a deadline is pending: epoll_wait takes
// int milliseconds, and a deadline further than this (web.request_timeout
// and idle_timeout may be set to minutes) is checked again after it.
constexpr auto kMaxSleep = std::chrono::seconds(60);

// epoll data: the connection id (or listener index) and which socket.
enum Tag : uint64_t { kListener = 0, kClient = 1, kReplies = 2, kWake = 3 };
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
//   serving    at a worker
//   writing    the worker is done; the response goes out at the client's pace
//   closing    response sent, write side shut: reading out what the client sends
enum class State { handshake, head, queued, serving, writing, closing };

struct Conn {
  uint64_t id = 0;
  ClientKey key;
  sys::UniqueFd client;
  std::unique_ptr<TlsSession> tls;
  State state = State::head;
  bool idle = false, hello_checked = false, deferred = false;
  TimePoint peek_at = TimePoint::max();  // a partial ClientHello header: peek again then
  TimePoint deadline, since;  // since: accepted, or the last response sent (eviction picks the oldest)
  bool client_eof = false, keep_alive = false, close_after = false;
  std::string in;                      // from the client, not yet answered
  Job job;                             // queued: the request for a worker
  std::string out;                     // the response head (or the gate's own refusal)
  size_t out_off = 0;
  std::shared_ptr<const std::string> body;  // the response body, shared with the scrape cache
  size_t body_off = 0;
  uint32_t client_events = 0;  // what epoll watches now
  size_t pending() const noexcept { return out.size() - out_off + (body ? body->size() - body_off : 0); }
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
  std::unique_ptr<Workers> workers;
  std::mutex tls_mu;  // guards tls only
  std::shared_ptr<SSL_CTX> tls;
  std::atomic<bool> stop{false};
  ClientTable table;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  uint64_t next_id = 1;
  ResponseBudget budget{kMemoryBudget, 2 * kSendBuffer};  // the kernel doubles SO_SNDBUF
  std::set<ClientKey> handshaken;  // clients that took a TLS handshake step in this batch of events
  std::unordered_map<uint64_t, ClientKey> orphans;  // closed while a worker answers them
  std::vector<uint64_t> deferred;                   // handshakes held back for fairness
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
    stats.buffered_bytes.store(budget.held(), std::memory_order_relaxed);
  }

  void close_conn(Conn& c) {
    table.release(c.key, c.id);
    budget.release(c.id);
    if (c.state == State::serving) orphans.emplace(c.id, c.key);
    conns.erase(c.id);  // closes the socket, which leaves the epoll set (a reply on its way finds no connection)
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

  // At most kAcceptsPerWake connections per wake-up (the listener stays
  // readable and is reported again): a flood of connects arriving as fast
  // as they are accepted would otherwise keep the loop here, and the
  // requests already in open connections would wait behind it.
  void accept_from(int lfd) {
    for (size_t i = 0; i < kAcceptsPerWake; ++i) {
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
    // The kernel's share of a response, bounded so the budget can count it.
    ::setsockopt(c->client.get(), SOL_SOCKET, SO_SNDBUF, &kSendBuffer, sizeof kSendBuffer);
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

  // One send of the head, then of the body, as far as the socket takes it.
  ssize_t send_some(Conn& c) {
    const bool head = c.out_off < c.out.size();
    const char* p = head ? c.out.data() + c.out_off : c.body->data() + c.body_off;
    const size_t len = std::min(head ? c.out.size() - c.out_off : c.body->size() - c.body_off, kWriteChunk);
    const ssize_t n = c.tls ? c.tls->write(p, len) : ::send(c.client.get(), p, len, MSG_NOSIGNAL);
    if (n > 0) (head ? c.out_off : c.body_off) += static_cast<size_t>(n);
    return n;
  }

  // Writes what is pending for the client; false when closed.
  bool write_client(Conn& c) {
    bool progressed = false;
    while (c.pending() > 0) {
      const ssize_t n = send_some(c);
      if (n > 0) {
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
      c.body.reset();  // the last holder frees it here
      c.body_off = 0;
      budget.release(c.id);
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
    c.job = Job{c.id, c.in.substr(h.skipped, h.head_len + h.body_len), h};
    c.in.erase(0, h.total());
    c.keep_alive = h.keep_alive;
    c.close_after = false;
    c.state = State::queued;
    c.deadline = clock.now() + o.head_timeout;
    table.ready(c.key, c.id);
  }

  void respond_from_gate(Conn& c, int code, const std::string& reason) {
    c.out.append(gate_response(code, reason));
    budget.hold(c.id, c.key, nullptr, c.out.size());
    c.close_after = true;
    c.state = State::writing;
    c.deadline = clock.now() + o.head_timeout;
  }

  // The response is out: the next request (kept alive), or closing. A
  // client that half-closed after pipelining still has its whole requests
  // answered, one by one; closing comes when none is left.
  void finish_response(Conn& c) {
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

  // The ClientHello's announced length, peeked before OpenSSL reads
  // anything (tls_server.h); false while it is not known yet, or refused.
  // A client that ends its stream before the header is whole cannot
  // complete a handshake: closed (its hang-up, level-triggered, would
  // otherwise wake the loop until the head timeout).
  bool check_hello(Conn& c, bool hangup) {
    unsigned char first[9];
    const ssize_t n = ::recv(c.client.get(), first, sizeof first, MSG_PEEK);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || (hangup && n < 9)) {
      close_conn(c);
      return false;
    }
    switch (client_hello_verdict(first, n > 0 ? static_cast<size_t>(n) : 0)) {
      case HelloVerdict::ok: c.hello_checked = true; return true;
      case HelloVerdict::refuse:
        stats.refused_hello.fetch_add(1, std::memory_order_relaxed);
        close_conn(c);
        return false;
      case HelloVerdict::more: break;
    }
    // Level-triggered input that stays unread would wake the loop at once,
    // over and over: with part of the header here, look again a little later.
    if (n > 0) c.peek_at = clock.now() + kPeekAgain;
    const uint32_t ce = n > 0 ? static_cast<uint32_t>(EPOLLRDHUP) : static_cast<uint32_t>(EPOLLIN | EPOLLRDHUP);
    if (ce != c.client_events) watch(c.client.get(), tag(c.id, kClient), c.client_events = ce, EPOLL_CTL_MOD);
    return false;
  }

  // Pumped again at the start of the next batch.
  void defer(Conn& c) {
    if (!c.deferred) deferred.push_back(c.id);
    c.deferred = true;
  }

  void pump_deferred() {
    std::vector<uint64_t> ids;
    ids.swap(deferred);
    for (uint64_t id : ids)
      if (auto it = conns.find(id); it != conns.end()) {
        it->second->deferred = false;
        pump(*it->second);
      }
  }

  // Moves one connection on as far as it can go without blocking.
  // `hangup`: the client's FIN was reported (read it in any state).
  void pump(Conn& c, bool hangup = false) {
    if (c.state == State::handshake) {
      if (!c.hello_checked && !check_hello(c, hangup)) return;
      // One handshake step per client per batch of events: a client opening
      // handshakes as fast as it can (each an RSA signature) gets them in
      // turn with everyone else's, not ahead of them.
      if (!handshaken.insert(c.key).second) return defer(c);
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
  }

  // --- the workers ---------------------------------------------------

  Duration serve_timeout() const { return o.head_timeout + o.idle_timeout + kServeGrace; }

  // Ready requests go to workers: clients in turn, within their share of the
  // workers (client_table.h) and of the memory budget (response_budget.h).
  void start_requests() {
    const auto may = [this](const ClientKey& key) { return budget.may_start(key); };
    while (auto id = table.next(may)) {
      auto it = conns.find(*id);
      if (it == conns.end()) continue;  // not reached: a closed connection leaves the queue
      Conn& c = *it->second;
      c.state = State::serving;
      c.deadline = clock.now() + serve_timeout();
      workers->submit(std::move(c.job));
      c.job = Job{};
    }
  }

  // The workers' answers: each goes out at its client's pace.
  void take_replies() {
    for (Reply& r : workers->take()) {
      auto it = conns.find(r.conn);
      if (it == conns.end()) {  // closed meanwhile: the reply is dropped, its worker free now
        if (auto orphan = orphans.find(r.conn); orphan != orphans.end()) table.finish(orphan->second), orphans.erase(orphan);
        continue;
      }
      Conn& c = *it->second;
      table.finish(c.key);
      c.out = std::move(r.head);
      c.out_off = 0;
      c.body = std::move(r.body);
      c.body_off = 0;
      budget.hold(c.id, c.key, c.body.get(), c.out.size());
      c.state = State::writing;
      c.deadline = clock.now() + o.head_timeout;
      pump(c);
    }
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
    std::vector<uint64_t> expired, peek;
    for (auto& [id, c] : conns) {
      if (now >= c->deadline) expired.push_back(id);
      else if (now >= c->peek_at) peek.push_back(id);
    }
    for (uint64_t id : expired)
      if (auto it = conns.find(id); it != conns.end()) expire(*it->second);
    for (uint64_t id : peek)
      if (auto it = conns.find(id); it != conns.end()) it->second->peek_at = TimePoint::max(), pump(*it->second);
  }

  // When the loop must wake without an event: the earliest deadline of a
  // connection, or the end of an accept pause. With nothing open it sleeps
  // until a connection comes: an idle exporter costs no wake-ups here.
  TimePoint wake_at() const {
    TimePoint t = accept_paused ? accept_paused_until : TimePoint::max();
    for (const auto& [id, c] : conns) t = std::min({t, c->deadline, c->peek_at});
    return t;
  }

  void on_event(uint64_t data, uint32_t ev) {
    const auto t = static_cast<Tag>(data & 3);
    const uint64_t id = data >> 2;
    if (t == kWake) return;
    if (t == kReplies) return take_replies();
    if (t == kListener) {
      if (id < listeners.size()) accept_from(listeners[id].get());
      return;
    }
    auto it = conns.find(id);
    if (it == conns.end()) return;  // closed earlier in this batch
    Conn& c = *it->second;
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
      if (!deferred.empty()) timeout = 0;
      const int n = ::epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()), timeout);
      handshaken.clear();
      pump_deferred();  // those held back last time go first
      for (int i = 0; i < n; ++i) on_event(events[static_cast<size_t>(i)].data.u64, events[static_cast<size_t>(i)].events);
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

void ConnectionGate::start(Workers::Handler handler, std::shared_ptr<SSL_CTX> tls) {
  set_tls(std::move(tls));
  if (thread_.joinable()) return;
  loop_->workers = std::make_unique<Workers>(loop_->o.workers, std::move(handler));
  loop_->watch(loop_->workers->notify_fd(), tag(0, kReplies), EPOLLIN);
  thread_ = std::thread([this] { loop_->run(); });
  ::pthread_setname_np(thread_.native_handle(), "http-gate");
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
  return o.listen.size() + o.max_open + 3;  // + epoll and two eventfds
}

}  // namespace memcg::exporter
