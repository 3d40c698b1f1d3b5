#include "exporter/http_server.h"

#include <CivetServer.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "exporter/basic_auth.h"
#include "exporter/http_framing.h"
#include "exporter/http_response.h"
#include "exporter/http_routes.h"
#include "plugin/cgroupfs/rlimit.h"
#include "plugin/sys/read_file.h"
#include "plugin/sys/unique_fd.h"

namespace memcg::exporter {
namespace {

// Every path needs valid credentials when basic_auth_users is set (as with
// Prometheus' own exporters); a failure gets 401 and a challenge.
class AuthHandler final : public CivetAuthHandler {
 public:
  explicit AuthHandler(std::map<std::string, std::string> users) : auth_(std::move(users)) {}
  bool authorize(CivetServer*, mg_connection* c) override {
    const char* h = mg_get_header(c, "Authorization");
    switch (auth_.check(h ? h : "")) {
      case BasicAuth::Result::ok: return true;
      case BasicAuth::Result::busy:
        // Every bcrypt slot is taken (a flood of unknown credentials): answer
        // at once rather than queue; clients verified before never get here.
        respond(c, 429, kPlainText, "429 too many authentication attempts at once, retry\n", {}, "Retry-After", "1");
        return false;
      case BasicAuth::Result::denied: break;
    }
    respond(c, 401, kPlainText, "401 unauthorized\n", {}, "WWW-Authenticate",
            "Basic realm=\"memcg-exporter\", charset=\"UTF-8\"");
    return false;
  }

 private:
  BasicAuth auth_;
};

// CivetWeb wants the key and the certificate in one PEM file; the web config
// names two. They are joined in an anonymous memory file (never on disk) that
// CivetWeb opens by its /proc path while it sets up TLS.
class JoinedPem {
 public:
  JoinedPem(const std::string& key_file, const std::string& cert_file)
      : fd_(::memfd_create("memcg-exporter-tls", MFD_CLOEXEC)) {
    if (!fd_.valid()) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
    for (const auto* f : {&key_file, &cert_file}) {
      auto r = sys::read_file(*f, kMaxPemBytes);
      if (!r.ok()) throw std::runtime_error("cannot read " + r.message());
      std::string& text = r.value();
      if (!text.empty() && text.back() != '\n') text.push_back('\n');
      if (::write(fd_.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        throw std::runtime_error(std::string("memfd write: ") + std::strerror(errno));
      std::fill(text.begin(), text.end(), '\0');  // the key leaves no copy on the heap
    }
  }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_.get()); }

 private:
  static constexpr size_t kMaxPemBytes = 4u << 20;
  sys::UniqueFd fd_;
};

}  // namespace

// One CivetWeb server on an ephemeral loopback port, with one web config
// file's TLS, basic auth and headers. A reload starts a new one and stops
// the old one once the gate sends new connections to the new.
class HttpServer::Instance {
 public:
  Instance(const config::WebConfig& web, WebBackend& backend, const WebConfigFile* web_file);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  int port() const noexcept { return port_; }

 private:
  CivetCallbacks callbacks_;
  std::vector<std::unique_ptr<Route>> routes_;
  ServerContext context_;
  std::unique_ptr<AuthHandler> auth_;
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
};

namespace {

constexpr const char* kMaxRequestHead = "16384";  // request line + headers, bytes
constexpr uint64_t kConnectionQueue = 20;         // accepted connections waiting for a worker

// CivetWeb's options for the listener and its workers. It listens on an
// ephemeral loopback port: clients reach it through the connection gate.
std::vector<std::string> server_options(const config::WebConfig& web, bool tls) {
  return {
      "listening_ports", tls ? "127.0.0.1:0s" : "127.0.0.1:0",
      "num_threads", std::to_string(web.max_connections),
      "connection_queue", std::to_string(kConnectionQueue),
      // CivetWeb applies this to the whole request head, not per read: a client
      // trickling bytes is cut off like a silent one.
      "request_timeout_ms", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(web.request_timeout).count()),
      "max_request_size", kMaxRequestHead,
      // An idle kept-alive connection holds a worker (CivetWeb: a thread per
      // connection) for this long: web.idle_timeout, short by default.
      "enable_keep_alive", web.idle_timeout.count() > 0 ? "yes" : "no",
      "keep_alive_timeout_ms", std::to_string(std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(web.idle_timeout).count())),
      "enable_directory_listing", "no",
      // Paths are matched exactly as sent: decoded, "/metrics%00.txt" would
      // be cut at the NUL and served as /metrics. None of ours needs escapes.
      "decode_url", "no",
  };
}

}  // namespace

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
  return ConnectionGate::fd_reserve(gate_options(web)) + kConnectionQueue + 1;
}

namespace {

// CivetWeb's ssl_protocol_version for the lowest TLS version accepted:
// 2 = TLS 1.0 and newer, 3 = 1.1, 4 = 1.2, 5 = TLS 1.3 only.
int civetweb_protocol_version(int tls_minor) noexcept { return 2 + tls_minor; }

// The TLS options: the joined key and certificate, the minimum version and
// client certificate verification.
void add_tls_options(std::vector<std::string>& options, const TlsServerConfig& t, const JoinedPem& pem) {
  if (!mg_check_feature(MG_FEATURES_SSL)) throw std::runtime_error("this CivetWeb build has no TLS support");
  options.insert(options.end(), {"ssl_certificate", pem.path(), "ssl_certificate_chain", t.cert_file,
                                 "ssl_protocol_version", std::to_string(civetweb_protocol_version(t.min_version - 10))});
  if (t.client_auth != ClientAuth::none)
    options.insert(options.end(), {"ssl_verify_peer", t.client_auth == ClientAuth::require_and_verify ? "yes" : "optional",
                                   "ssl_ca_file", t.client_ca_file, "ssl_default_verify_paths", "no"});
}

// Before any handler: an ambiguous request head gets 400 and the connection
// is closed (CivetWeb closes after its own error responses).
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

}  // namespace

HttpServer::Instance::Instance(const config::WebConfig& web, WebBackend& backend, const WebConfigFile* web_file) {
  const bool tls = web_file && web_file->tls;
  std::vector<std::string> options = server_options(web, tls);
  std::unique_ptr<JoinedPem> pem;  // read by CivetWeb while the server starts, then closed
  if (tls) {
    pem = std::make_unique<JoinedPem>(web_file->tls_server.key_file, web_file->tls_server.cert_file);
    add_tls_options(options, web_file->tls_server, *pem);
  }
  if (web_file) context_.headers = web_file->headers;
  routes_ = make_routes(backend);
  try {
    callbacks_.begin_request = reject_ambiguous_framing;
    server_ = std::make_unique<CivetServer>(options, &callbacks_, &context_);
  } catch (const CivetException& e) {
    throw std::runtime_error(std::string("cannot start the web server") + (tls ? " with TLS" : "") + ": " + e.what());
  }
  if (!server_->getContext()) throw std::runtime_error(std::string("cannot start the web server") + (tls ? " with TLS" : ""));
  if (web_file && !web_file->basic_auth_users.empty()) {
    auth_ = std::make_unique<AuthHandler>(web_file->basic_auth_users);
    server_->addAuthHandler("/", auth_.get());  // a prefix: every path
  }
  // "/" is registered last so the specific routes take their paths.
  for (auto& route : routes_) server_->addHandler(route->path(), route.get());
  const auto internal = server_->getListeningPortsFull();
  if (internal.empty()) throw std::runtime_error("the web server has no loopback port");
  port_ = internal.front().port;
}

HttpServer::HttpServer(const config::WebConfig& web, WebBackend& backend, const WebConfigFile* web_file)
    : web_(web), backend_(backend) {
  // The public addresses first: a port in use is the error to report.
  gate_ = std::make_unique<ConnectionGate>(gate_options(web), backend.status().http);
  instance_ = std::make_unique<Instance>(web_, backend_, web_file);
  gate_->start(instance_->port(), web_file && web_file->tls);
}

void HttpServer::reload(const WebConfigFile* web_file) {
  auto next = std::make_unique<Instance>(web_, backend_, web_file);  // throws: the running one stays
  gate_->start(next->port(), web_file && web_file->tls);
  instance_.swap(next);
  // `next` is now the old server: stopping it lets the requests it is serving
  // finish (mg_stop joins its workers); new connections already go to the new.
}

namespace {

// Opens and drops a TCP connection to CivetWeb's loopback port, to wake its
// master thread out of poll().
void poke(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::close(fd);
}

}  // namespace

HttpServer::Instance::~Instance() {
  if (!server_) return;
  // mg_stop() waits for CivetWeb's master thread, which polls its listening
  // socket in 2 s quanta (SOCKET_TIMEOUT_QUANTUM in civetweb.c), so a plain
  // stop takes up to 2 s. Connecting to its port wakes the poll at once.
  std::atomic<bool> done{false};
  std::thread stopper([&] {
    server_->close();
    done = true;
  });
  for (int i = 0; i < 40 && !done; ++i) {
    if (port_) poke(port_);
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  stopper.join();
}

HttpServer::~HttpServer() {
  gate_.reset();  // no new requests; open client connections are closed
  instance_.reset();
}

std::vector<ListenPort> HttpServer::ports() const { return gate_->ports(); }

}  // namespace memcg::exporter
