// The HTTP server: the connection gate (connection_gate.h: public sockets,
// TLS from the web config file, the one parser, the workers) answering with
// basic auth on every path and the routes of routes.h. No files are served.
// Unknown paths get 404, wrong methods 405.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "exporter/http/connection_gate.h"
#include "exporter/http/web_backend.h"
#include "exporter/http/web_config.h"

namespace memcg::exporter {

class HttpServer {
 public:
  // Starts listening; throws std::runtime_error (naming the address and the
  // errno) when an address cannot be bound or TLS cannot be set up. `web_file` (the
  // --web.config.file): TLS, basic auth and extra headers; null for none.
  HttpServer(const config::WebConfig& web, WebBackend& backend, const WebConfigFile* web_file = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::vector<ListenPort> ports() const;

  // Applies a (re)loaded web config file — TLS certificate and key, client
  // CA, basic auth users, headers — without closing any socket: new TLS
  // connections get the new certificate (open ones keep their session), and
  // requests from then on the new users and headers. Nothing is restarted,
  // so no request in flight is dropped. Throws std::runtime_error (e.g. an
  // unreadable key, a key that does not match) and then changes nothing.
  void reload(const WebConfigFile* web_file);

 private:
  class Handler;
  std::unique_ptr<Handler> handler_;      // the routes, on the gate's workers
  std::unique_ptr<ConnectionGate> gate_;  // destroyed first: its workers call handler_
};

// Descriptors the web server holds at most, for the fd budget: the gate's
// (ConnectionGate::fd_reserve: every open client connection).
uint64_t web_fd_reserve(const config::WebConfig& web) noexcept;

// web.max_open_connections as the fd limit allows: at most a quarter of the
// descriptors go to client connections (at least 16), the cgroups being the
// point. With the unit's LimitNOFILE=131072 the configured value stands.
uint32_t max_open_within(uint64_t fd_limit, uint32_t configured) noexcept;


}  // namespace memcg::exporter
