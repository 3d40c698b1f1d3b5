// The front of the web server: owns the public listening sockets, terminates
// TLS, and hands CivetWeb one whole request at a time.
//
// Why: CivetWeb gives every connection a worker thread for as long as it is
// open, so clients that connect and send nothing, trickle a header, keep a
// connection alive with a cheap request now and then, pipeline requests and
// never read, or sit in TLS between requests would hold every worker and
// starve Prometheus. Here:
//
//   a connection  costs a descriptor and an epoll entry, nothing more, while
//                 its TLS handshake runs, its request arrives, it idles
//                 kept-alive, or its response is written out. Its request
//                 head must be complete within web.request_timeout, an idle
//                 kept-alive connection is closed after web.idle_timeout, a
//                 client's FIN or reset is seen at once in every state.
//   a request     is read whole (head and body) by the gate, then waits for a
//                 worker; it is relayed on a connection of its own to
//                 CivetWeb, which listens on a private Unix socket
//                 (private_socket.h), with "Connection: close".
//   a worker      is held only while CivetWeb produces a response: the gate
//                 reads the response as fast as CivetWeb writes it into a
//                 buffer (up to kMaxBuffered in all, kRelayChunk per
//                 connection beyond that) and writes it to the client at the
//                 client's pace, the worker already free.
//   a client      (an IPv4 address, an IPv6 /64) may hold a limited number of
//                 connections (client_table.h), at most half the workers, and
//                 not the last free one while it holds one already; requests
//                 get workers clients in turn. When every open connection is
//                 taken, a newcomer evicts the oldest waiting connection of
//                 the client with the most, rather than being refused.
//
// One thread, one epoll set.
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

typedef struct ssl_ctx_st SSL_CTX;

namespace memcg::exporter {

class PrivateSocket;

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
  size_t workers = 8;            // web.max_connections: requests at CivetWeb at once
};

class ConnectionGate {
 public:
  // Responses held for clients at once, in all; beyond it a connection's
  // response is relayed kRelayChunk at a time, at its client's pace.
  static constexpr size_t kMaxBuffered = 32u << 20;
  static constexpr size_t kRelayChunk = 64u << 10;
  static constexpr size_t kMaxHead = 16384;     // request line and fields
  static constexpr size_t kMaxBody = 64u << 10;  // no endpoint takes a body; POST sends none
  static constexpr auto kLinger = std::chrono::seconds(2);  // reading out a closing client

  // Binds and listens on every address of `o.listen`; throws
  // std::runtime_error naming the address and the errno. Every deadline
  // (head, idle, queued, serving, linger) is on `clock`.
  ConnectionGate(GateOptions o, GateStats& stats, Clock& clock = Clock::system());
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // Starts relaying requests to CivetWeb on `upstream` (which must outlive
  // the gate), speaking TLS to clients when `tls` is set.
  void start(const PrivateSocket& upstream, std::shared_ptr<SSL_CTX> tls);
  // The TLS context new connections get (null: plain HTTP); connections
  // already open keep theirs.
  void set_tls(std::shared_ptr<SSL_CTX> tls);
  std::vector<ListenPort> ports() const { return ports_; }

  // Descriptors the gate and the server behind it hold at most: the
  // listening sockets, every open client connection, and per request at a
  // worker the upstream socket and CivetWeb's end of it.
  static uint64_t fd_reserve(const GateOptions& o) noexcept;

 private:
  struct Loop;
  std::vector<ListenPort> ports_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace memcg::exporter
