// The HTTP endpoints, one handler each, over a WebBackend:
//   GET /metrics            MetricsEndpoint (one body per snapshot, gzip)
//   GET /                   the status page
//   GET /-/healthy, /-/ready
//   GET /api/v1/cgroups     the latest snapshot as JSON
//   POST /api/v1/refresh?cgroup=GLOB   (only with [web] refresh_api = true)
// A route answers its exact path; other paths under it get 404, methods it
// does not implement 405 with Allow.
#pragma once

#include <CivetServer.h>

#include <memory>
#include <string>
#include <vector>

#include "exporter/web_backend.h"

namespace memcg::exporter {

class Route : public CivetHandler {
 public:
  Route(std::string path, bool get, bool post) : path_(std::move(path)), get_(get), post_(post) {}
  const std::string& path() const noexcept { return path_; }
  bool handleGet(CivetServer*, mg_connection* c) override;
  bool handleHead(CivetServer*, mg_connection* c) override;
  bool handlePost(CivetServer*, mg_connection* c) override;
  bool handlePut(CivetServer*, mg_connection* c) override;
  bool handleDelete(CivetServer*, mg_connection* c) override;
  bool handleOptions(CivetServer*, mg_connection* c) override;
  bool handlePatch(CivetServer*, mg_connection* c) override;

 protected:
  virtual void get(mg_connection*) {}
  virtual void post(mg_connection*) {}

 private:
  bool dispatch(mg_connection* c, bool allowed, bool post);
  std::string path_;
  bool get_, post_;
};

// Every endpoint, "/" last (CivetWeb matches handlers by prefix).
std::vector<std::unique_ptr<Route>> make_routes(WebBackend& backend);

}  // namespace memcg::exporter
