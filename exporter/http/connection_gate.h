// The web server's front and its one HTTP path: owns the public listening
// sockets, terminates TLS, reads and parses each request (head.h, the one
// parser), gives it to a worker (workers.h), and writes the worker's
// response to the client at the client's pace.
//
// Why this shape: a server that gives every connection a thread for as long
// as it is open lets clients that connect and send nothing, trickle a
// header, keep a connection alive with a cheap request now and then,
// pipeline requests and never read, or sit in TLS between requests hold
// every thread and starve Prometheus. Here:
//
//   a connection  costs a descriptor, an epoll entry and its input (at most
//                 kMaxHead + kMaxBody) while its TLS handshake runs, its
//                 request arrives, it idles kept-alive, or its response is
//                 written out. Its request head must be complete within
//                 web.request_timeout, an idle kept-alive connection is
//                 closed after web.idle_timeout, a client's FIN or reset is
//                 seen at once in every state. A TLS ClientHello announcing
//                 more than 16 KiB is refused before OpenSSL reads it.
//   a request     is read whole (head and body) and parsed once, then waits
//                 for a worker.
//   a worker      runs the route and hands back the head and the body (the
//                 scrape cache's, shared, not copied); it never touches a
//                 socket, so a slow client holds no worker.
//   a response    holds its body until written; the memory budget
//                 (response_budget.h, kMemoryBudget with the kernel's
//                 send buffers, SO_SNDBUF kSendBuffer) decides whether a
//                 client that holds responses already may have another.
//   a client      (an IPv4 address, an IPv6 /64) may hold a limited number of
//                 connections (client_table.h), at most half the workers, and
//                 not the last free one while it holds one already; requests
//                 get workers clients in turn, and TLS handshakes one step
//                 per client per batch of events. When every open connection
//                 is taken, a newcomer evicts the oldest waiting connection
//                 of the client with the most, rather than being refused.
//
// One thread, one epoll set; the workers beside it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exporter/exposition/gate_stats.h"
#include "plugin/clock.h"
#include "base/sys/unique_fd.h"
#include "exporter/http/workers.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace memcg::exporter {

struct ListenPort {
  int port = 0;
  bool ipv6 = false;  // an IPv6 socket that accepts IPv4 too
};

struct GateOptions {
  std::vector<std::string> listen;  // web.listen: ":PORT", "HOST:PORT", "[V6]:PORT"
  Duration head_timeout{std::chrono::seconds(10)};  // web.request_timeout: a head, a response write
  Duration idle_timeout{std::chrono::seconds(2)};   // web.idle_timeout: a kept-alive connection between requests
  size_t max_open = 1024;        // web.max_open_connections
  size_t max_per_client = 64;    // web.max_connections_per_client
  size_t workers = 8;            // web.max_connections: requests answered at once
};

class ConnectionGate {
 public:
  // What responses on their way may hold, bodies and kernel send buffers
  // (response_budget.h), and each connection's send buffer.
  static constexpr size_t kMemoryBudget = 48u << 20;
  static constexpr int kSendBuffer = 64 << 10;
  static constexpr size_t kMaxHead = 16384;     // request line and fields
  static constexpr size_t kMaxBody = 4096;  // no endpoint takes a body; POST sends none
  static constexpr auto kLinger = std::chrono::seconds(2);  // reading out a closing client

  // Binds and listens on every address of `o.listen`; throws
  // std::runtime_error naming the address and the errno. Every deadline
  // (head, idle, queued, serving, linger) is on `clock`.
  ConnectionGate(GateOptions o, GateStats& stats, Clock& clock = Clock::system());
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // Starts the workers, each answering with `handler`, and serving
  // clients, in TLS when `tls` is set.
  void start(Workers::Handler handler, std::shared_ptr<SSL_CTX> tls);
  // The TLS context new connections get (null: plain HTTP); connections
  // already open keep theirs.
  void set_tls(std::shared_ptr<SSL_CTX> tls);
  std::vector<ListenPort> ports() const { return ports_; }

  // Descriptors the gate holds at most: the listening sockets, every open
  // client connection, its epoll set and eventfds.
  static uint64_t fd_reserve(const GateOptions& o) noexcept;

 private:
  struct Loop;
  std::vector<ListenPort> ports_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace memcg::exporter
