// The HTTP listener (CivetWeb worker threads): its options, TLS from the web
// config file, basic auth on every path, and the endpoints of
// http_routes.h. No files are served. Unknown paths get 404, wrong methods 405.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "exporter/web_backend.h"
#include "exporter/web_config.h"

class CivetServer;

namespace memcg::exporter {

struct ListenPort {
  int port = 0;
  bool ipv6 = false;
};

class HttpServer {
 public:
  // Starts listening; throws std::runtime_error (with CivetWeb's reason) when
  // an address cannot be bound or TLS cannot be set up. `web_file` (the
  // --web.config.file): TLS, basic auth and extra headers; null for none.
  HttpServer(const config::WebConfig& web, WebBackend& backend, const WebConfigFile* web_file = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::vector<ListenPort> ports() const;

 private:
  struct Handlers;
  std::unique_ptr<Handlers> handlers_;
  std::unique_ptr<CivetServer> server_;
};

// CivetWeb's listening_ports value for our listen addresses (":9756" = every
// address, IPv6 too when the host has it).
std::string civetweb_ports(const std::vector<std::string>& listen, bool ipv6_available, bool tls = false);

}  // namespace memcg::exporter
