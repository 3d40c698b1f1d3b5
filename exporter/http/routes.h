// The HTTP endpoints, one class each, as functions of a Request (request.h)
// over a WebBackend — no sockets here (server.cpp hands them to the workers):
//   GET /metrics            MetricsEndpoint (one body per snapshot, gzip)
//   GET /                   the status page
//   GET /-/healthy, /-/ready
//   GET /api/v1/cgroups     the latest snapshot as JSON
//   POST /api/v1/refresh?cgroup=GLOB   (only with [web] refresh_api = true)
// A route answers its exact path; other paths under it get 404, methods it
// does not implement 405 with Allow. HEAD is GET without the body.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exporter/http/request.h"
#include "exporter/http/response.h"
#include "exporter/http/web_backend.h"

namespace memcg::exporter {

class Route {
 public:
  Route(std::string path, bool get, bool post) : path_(std::move(path)), get_(get), post_(post) {}
  virtual ~Route() = default;
  Route(const Route&) = delete;
  Route& operator=(const Route&) = delete;

  // The path it is registered under; the server hands it every request
  // whose path starts with it and that no longer path took.
  const std::string& path() const noexcept { return path_; }
  Response handle(const Request& req);

 protected:
  virtual Response get(const Request&) { return Response::error(404, "404 page not found"); }
  virtual Response post(const Request&) { return Response::error(404, "404 page not found"); }

 private:
  std::string path_;
  bool get_, post_;
};

// Every endpoint, "/" last (the server matches paths by prefix, in order).
std::vector<std::unique_ptr<Route>> make_routes(WebBackend& backend);

// Basic auth on every path when the web config sets users (as Prometheus'
// own exporters do): nullopt lets the request through, otherwise the answer
// (401 with a challenge, or 429 when every bcrypt slot is busy).
std::optional<Response> authorize(const Request& req, const WebSettings& settings);

}  // namespace memcg::exporter
