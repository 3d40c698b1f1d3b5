#include "exporter/http/server.h"

#include <CivetServer.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>
#include <span>
#include <stdexcept>
#include <thread>

#include "exporter/http/basic_auth.h"
#include "exporter/http/framing.h"
#include "exporter/http/request.h"
#include "exporter/http/response.h"
#include "exporter/http/routes.h"
#include "exporter/http/private_socket.h"
#include "exporter/http/tls_server.h"
#include "plugin/cgroupfs/rlimit.h"

namespace memcg::exporter {
namespace {

// The web settings in force (a reload swaps them whole; a request uses the
// ones it started with).
class ServerContext {
 public:
  std::shared_ptr<const WebSettings> settings() const {
    std::lock_guard lock(mu_);
    return settings_;
  }
  void set(std::shared_ptr<const WebSettings> s) {
    std::lock_guard lock(mu_);
    settings_ = std::move(s);
  }

 private:
  mutable std::mutex mu_;  // held only to copy or swap the pointer
  std::shared_ptr<const WebSettings> settings_ = std::make_shared<WebSettings>();
};

constexpr size_t kCoalesceBelow = 16384;  // head and body in one write below this

// Writes `r` and then runs its after_sent.
void write_response(mg_connection* c, const Request& req, const Response& r, const WebSettings& settings) {
  std::string head = response_head(r, settings, ::time(nullptr));
  if (!sends_body(req, r)) {
    mg_write(c, head.data(), head.size());
  } else if (r.bytes().size() < kCoalesceBelow) {  // one write, one TCP segment for small bodies
    head.append(r.bytes());
    mg_write(c, head.data(), head.size());
  } else {
    mg_write(c, head.data(), head.size());
    mg_write(c, r.bytes().data(), r.bytes().size());
  }
  if (r.after_sent) r.after_sent();
}

// The request as routes see it, borrowing CivetWeb's strings.
Request request_of(const mg_request_info& ri, std::span<Header> fields) {
  Request req;
  req.method = method_of(ri.request_method ? ri.request_method : "");
  req.path = ri.local_uri ? ri.local_uri : "";
  req.query = ri.query_string ? ri.query_string : "";
  const size_t n = std::min(static_cast<size_t>(std::max(ri.num_headers, 0)), fields.size());
  for (size_t i = 0; i < n; ++i)
    fields[i] = {ri.http_headers[i].name ? ri.http_headers[i].name : "", ri.http_headers[i].value ? ri.http_headers[i].value : ""};
  req.headers = fields.first(n);
  return req;
}

// CivetWeb's side of a Route: every method goes to Route::handle, after
// basic auth (every path needs credentials when users are set).
class RouteAdapter final : public CivetHandler {
 public:
  RouteAdapter(Route& route, const ServerContext& context) : route_(route), context_(context) {}
  bool handleGet(CivetServer*, mg_connection* c) override { return serve(c); }
  bool handleHead(CivetServer*, mg_connection* c) override { return serve(c); }
  bool handlePost(CivetServer*, mg_connection* c) override { return serve(c); }
  bool handlePut(CivetServer*, mg_connection* c) override { return serve(c); }
  bool handleDelete(CivetServer*, mg_connection* c) override { return serve(c); }
  bool handleOptions(CivetServer*, mg_connection* c) override { return serve(c); }
  bool handlePatch(CivetServer*, mg_connection* c) override { return serve(c); }

 private:
  bool serve(mg_connection* c) {
    const mg_request_info* ri = mg_get_request_info(c);
    if (!ri) return false;
    Header fields[64];  // CivetWeb parses at most MG_MAX_HEADERS (64) fields
    const Request req = request_of(*ri, fields);
    const auto settings = context_.settings();
    if (auto refused = authorize(req, *settings)) write_response(c, req, *refused, *settings);
    else write_response(c, req, route_.handle(req), *settings);
    return true;
  }

  Route& route_;
  const ServerContext& context_;
};

constexpr const char* kMaxRequestHead = "16384";  // request line + headers, bytes
constexpr uint64_t kConnectionQueue = 20;         // accepted connections waiting for a worker

// CivetWeb's options: it starts on an ephemeral loopback port, which the
// private socket then replaces (private_socket.h); one request per
// connection, each whole when it arrives (the gate read it).
std::vector<std::string> server_options(const config::WebConfig& web) {
  return {
      "listening_ports", "127.0.0.1:0",
      "num_threads", std::to_string(web.max_connections),
      "connection_queue", std::to_string(kConnectionQueue),
      "request_timeout_ms", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(web.request_timeout).count()),
      "max_request_size", kMaxRequestHead,
      "enable_keep_alive", "no",
      "enable_directory_listing", "no",
      // Paths are matched exactly as sent: decoded, "/metrics%00.txt" would
      // be cut at the NUL and served as /metrics. None of ours needs escapes.
      "decode_url", "no",
  };
}

// Before any handler: an ambiguous request head gets 400 and the connection
// is closed (the gate refuses these itself; this holds for CivetWeb's own
// reading of what it was given).
int reject_ambiguous_framing(mg_connection* conn) {
  const mg_request_info* ri = mg_get_request_info(conn);
  if (!ri) return 0;
  HeaderField fields[64];  // CivetWeb parses at most MG_MAX_HEADERS (64) fields
  const int n = std::min(ri->num_headers, static_cast<int>(std::size(fields)));
  for (int i = 0; i < n; ++i)
    fields[i] = {ri->http_headers[i].name ? ri->http_headers[i].name : "", ri->http_headers[i].value ? ri->http_headers[i].value : ""};
  const auto why = framing_error({fields, static_cast<size_t>(n)});
  if (!why) return 0;
  mg_send_http_error(conn, 400, "400 bad request: %s\n", why->c_str());
  return 400;  // handled (non-zero), logged with this status
}

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

}  // namespace

// CivetWeb behind the gate: its workers answer one request per connection,
// reached only through the private socket.
class HttpServer::Instance {
 public:
  Instance(const config::WebConfig& web, WebBackend& backend, std::shared_ptr<const WebSettings> settings);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  const PrivateSocket& socket() const noexcept { return *socket_; }
  ServerContext& context() noexcept { return context_; }

 private:
  CivetCallbacks callbacks_;
  std::vector<std::unique_ptr<Route>> routes_;
  ServerContext context_;
  std::vector<std::unique_ptr<RouteAdapter>> adapters_;
  std::unique_ptr<PrivateSocket> socket_;
  std::unique_ptr<CivetServer> server_;
};

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

uint32_t max_open_within(uint64_t fd_limit, uint32_t configured) noexcept {
  const uint64_t quarter = fd_limit > cgroupfs::kBaseFdReserve ? (fd_limit - cgroupfs::kBaseFdReserve) / 4 : 0;
  return static_cast<uint32_t>(std::min<uint64_t>(configured, std::max<uint64_t>(16, quarter)));
}

uint64_t web_fd_reserve(const config::WebConfig& web) noexcept {
  return ConnectionGate::fd_reserve(gate_options(web)) + kConnectionQueue;
}

HttpServer::Instance::Instance(const config::WebConfig& web, WebBackend& backend,
                               std::shared_ptr<const WebSettings> settings) {
  context_.set(std::move(settings));  // before any worker runs
  const std::vector<std::string> options = server_options(web);
  routes_ = make_routes(backend);
  socket_ = std::make_unique<PrivateSocket>();
  try {
    callbacks_.begin_request = reject_ambiguous_framing;
    server_ = std::make_unique<CivetServer>(options, &callbacks_);
  } catch (const CivetException& e) {
    throw std::runtime_error(std::string("cannot start the web server: ") + e.what());
  }
  if (!server_->getContext()) throw std::runtime_error("cannot start the web server");
  // "/" is registered last so the specific routes take their paths.
  for (auto& route : routes_) {
    adapters_.push_back(std::make_unique<RouteAdapter>(*route, context_));
    server_->addHandler(route->path(), adapters_.back().get());
  }
  const auto internal = server_->getListeningPortsFull();
  if (internal.empty()) throw std::runtime_error("the web server has no loopback port");
  const int port = internal.front().port;
  socket_->take_over(port);
  // Its acceptor may be polling the TCP socket still (2 s quanta): a
  // connection there wakes it onto the private one, and the TCP port closes.
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sys::UniqueFd poke(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (poke.valid()) (void)::connect(poke.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
}

HttpServer::Instance::~Instance() {
  if (!server_) return;
  // mg_stop() waits for CivetWeb's acceptor, which polls its listening
  // socket in 2 s quanta (SOCKET_TIMEOUT_QUANTUM in civetweb.c), so a plain
  // stop takes up to 2 s. A connection to it wakes the poll at once.
  std::atomic<bool> done{false};
  std::thread stopper([&] {
    server_->close();
    done = true;
  });
  for (int i = 0; i < 40 && !done; ++i) {
    (void)socket_->connect();
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  stopper.join();
}

HttpServer::HttpServer(const config::WebConfig& web, WebBackend& backend, const WebConfigFile* web_file)
    : web_(web), backend_(backend) {
  // The public addresses first: a port in use is the error to report.
  gate_ = std::make_unique<ConnectionGate>(gate_options(web), backend.status().http);
  auto tls = tls_context(web_file);
  instance_ = std::make_unique<Instance>(web_, backend_, web_settings(web_file));
  gate_->start(instance_->socket(), std::move(tls));
}

void HttpServer::reload(const WebConfigFile* web_file) {
  auto tls = tls_context(web_file);  // throws: the running settings stay
  auto settings = web_settings(web_file);
  if (const auto old = instance_->context().settings(); old->auth && settings->auth)
    settings->auth->keep_verified(*old->auth);
  gate_->set_tls(std::move(tls));
  instance_->context().set(std::move(settings));
}

HttpServer::~HttpServer() {
  gate_.reset();  // no new requests; open client connections are closed
  instance_.reset();
}

std::vector<ListenPort> HttpServer::ports() const { return gate_->ports(); }

}  // namespace memcg::exporter
