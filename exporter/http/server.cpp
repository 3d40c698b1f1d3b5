#include "exporter/http/server.h"

#include <algorithm>
#include <ctime>
#include <mutex>
#include <stdexcept>

#include "exporter/http/basic_auth.h"
#include "exporter/http/request.h"
#include "exporter/http/response.h"
#include "exporter/http/routes.h"
#include "exporter/http/tls_server.h"
#include "plugin/cgroupfs/rlimit.h"

namespace memcg::exporter {
namespace {

std::shared_ptr<WebSettings> web_settings(const WebConfigFile* web_file) {
  auto s = std::make_shared<WebSettings>();
  if (!web_file) return s;
  s->headers = web_file->headers;
  if (!web_file->basic_auth_users.empty()) s->auth = std::make_shared<BasicAuth>(web_file->basic_auth_users);
  return s;
}

std::shared_ptr<SSL_CTX> tls_context(const WebConfigFile* web_file) {
  return web_file && web_file->tls ? make_tls_context(web_file->tls_server) : nullptr;
}

GateOptions gate_options(const config::WebConfig& web) {
  GateOptions o;
  o.listen = web.listen;
  o.head_timeout = web.request_timeout;
  o.idle_timeout = web.idle_timeout;
  o.max_open = web.max_open_connections;
  o.max_per_client = web.max_connections_per_client;
  o.workers = web.max_connections;
  return o;
}

}  // namespace

// The routes and the settings in force (a reload swaps them whole; a
// request uses the ones it started with).
class HttpServer::Handler {
 public:
  Handler(WebBackend& backend, std::shared_ptr<const WebSettings> settings)
      : routes_(make_routes(backend)), settings_(std::move(settings)) {}

  std::shared_ptr<const WebSettings> settings() const {
    std::lock_guard lock(mu_);
    return settings_;
  }
  void set(std::shared_ptr<const WebSettings> s) {
    std::lock_guard lock(mu_);
    settings_ = std::move(s);
  }

  // On a worker: basic auth on every path, then the route of exactly that
  // path (404 for any other), then the bytes for the gate to write.
  Reply operator()(const Job& job) const {
    std::vector<Header> fields;
    const Request req = request_of(job, fields);
    const auto s = settings();
    auto refused = authorize(req, *s);
    Response r = refused ? std::move(*refused) : route(req);
    Reply reply;
    reply.head = response_head(r, *s, ::time(nullptr), job.head.keep_alive);
    if (sends_body(req, r)) reply.body = r.body;
    if (r.after_sent) r.after_sent();
    return reply;
  }

 private:
  Response route(const Request& req) const {
    for (const auto& r : routes_)
      if (r->path() == req.path) return r->handle(req);
    return Response::error(404, "404 page not found");
  }

  std::vector<std::unique_ptr<Route>> routes_;
  mutable std::mutex mu_;  // held only to copy or swap the pointer
  std::shared_ptr<const WebSettings> settings_;
};

uint32_t max_open_within(uint64_t fd_limit, uint32_t configured) noexcept {
  const uint64_t quarter = fd_limit > cgroupfs::kBaseFdReserve ? (fd_limit - cgroupfs::kBaseFdReserve) / 4 : 0;
  return static_cast<uint32_t>(std::min<uint64_t>(configured, std::max<uint64_t>(16, quarter)));
}

uint64_t web_fd_reserve(const config::WebConfig& web) noexcept { return ConnectionGate::fd_reserve(gate_options(web)); }

HttpServer::HttpServer(const config::WebConfig& web, WebBackend& backend, const WebConfigFile* web_file)
    : handler_(std::make_unique<Handler>(backend, web_settings(web_file))) {
  // The public addresses first: a port in use is the error to report.
  gate_ = std::make_unique<ConnectionGate>(gate_options(web), backend.status().http);
  const Handler& h = *handler_;
  gate_->start([&h](const Job& job) { return h(job); }, tls_context(web_file));
}

void HttpServer::reload(const WebConfigFile* web_file) {
  auto tls = tls_context(web_file);  // throws: the running settings stay
  auto settings = web_settings(web_file);
  if (const auto old = handler_->settings(); old->auth && settings->auth) settings->auth->keep_verified(*old->auth);
  gate_->set_tls(std::move(tls));
  handler_->set(std::move(settings));
}

HttpServer::~HttpServer() {
  gate_.reset();  // no new requests; the workers finish theirs; client connections close
}

std::vector<ListenPort> HttpServer::ports() const { return gate_->ports(); }

}  // namespace memcg::exporter
