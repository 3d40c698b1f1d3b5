// The front of the web server: owns the public listening sockets and lets a
// connection reach a CivetWeb worker only once its request head has arrived.
//
// Why: CivetWeb gives every connection a worker thread from accept() on, so
// a few hundred clients that connect and send nothing, or trickle a header a
// byte at a time, would hold every worker and starve Prometheus. Here a
// waiting connection costs one descriptor and an epoll entry; it is closed if
// its head is not complete within web.request_timeout; per client (an IPv4
// address, an IPv6 /64) only max_connections_per_client may be open, and the
// workers go to clients in turn, none holding more than half of them
// (client_table.h). A connection whose head is complete is relayed, bytes
// both ways, to CivetWeb listening on an ephemeral loopback port; TLS passes
// through untouched (CivetWeb terminates it; the gate waits for the whole
// first TLS record, the ClientHello, instead of a request head).
//
// One thread, one epoll set; relaying costs a copy through a 64 KiB buffer
// per direction, next to a scrape's rendering nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "exporter/gate_stats.h"
#include "plugin/clock.h"
#include "plugin/sys/unique_fd.h"

namespace memcg::exporter {

struct ListenPort {
  int port = 0;
  bool ipv6 = false;  // an IPv6 socket that accepts IPv4 too
};

struct GateOptions {
  std::vector<std::string> listen;  // web.listen: ":PORT", "HOST:PORT", "[V6]:PORT"
  Duration head_timeout{std::chrono::seconds(10)};  // web.request_timeout
  Duration idle_timeout{std::chrono::seconds(2)};   // web.idle_timeout (CivetWeb's; the relay allows more)
  size_t max_open = 1024;        // web.max_open_connections
  size_t max_per_client = 64;    // web.max_connections_per_client
  size_t workers = 8;            // web.max_connections: relayed at once
};

class ConnectionGate {
 public:
  // Binds and listens on every address of `o.listen`; throws
  // std::runtime_error naming the address and the errno.
  ConnectionGate(GateOptions o, GateStats& stats);
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // Starts relaying to 127.0.0.1:`upstream_port` (speaking TLS when `tls`:
  // then a connection is ready with its ClientHello); may be called again to
  // switch to another upstream (connections already relayed stay on theirs).
  void start(int upstream_port, bool tls);
  std::vector<ListenPort> ports() const { return ports_; }

  // Descriptors the gate and the server behind it hold at most: the
  // listening sockets, every open client connection, and per relayed one the
  // upstream socket and CivetWeb's end of it.
  static uint64_t fd_reserve(const GateOptions& o) noexcept;

 private:
  struct Loop;
  std::vector<ListenPort> ports_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace memcg::exporter
