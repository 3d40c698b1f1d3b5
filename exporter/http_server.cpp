#include "exporter/http_server.h"

#include <CivetServer.h>
#include <malloc.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "exporter/basic_auth.h"
#include "exporter/gzip.h"
#include "exporter/scrape_cache.h"
#include "exporter/landing_page.h"
#include "exporter/version.h"
#include "plugin/json_writer.h"
#include "plugin/snapshot_json.h"
#include "plugin/sys/read_file.h"
#include "plugin/sys/unique_fd.h"

namespace memcg::exporter {
namespace {

constexpr const char* kTextFormat = "text/plain; version=0.0.4; charset=utf-8";

std::string_view uri_of(mg_connection* conn) {
  const mg_request_info* ri = mg_get_request_info(conn);
  return ri && ri->local_uri ? ri->local_uri : "";
}

// What every response carries besides its own headers: the web config's
// http_server_config.headers. Reached through CivetServer's user context.
struct ServerContext {
  std::vector<std::pair<std::string, std::string>> headers;
};

const ServerContext* server_context(mg_connection* conn) {
  auto* server = static_cast<const CivetServer*>(mg_get_user_data(mg_get_context(conn)));
  return server ? static_cast<const ServerContext*>(server->getUserContext()) : nullptr;
}

// Whether CivetWeb keeps the connection after this response (its
// should_keep_alive(): keep-alive is on; HTTP/1.1 unless "Connection: close",
// HTTP/1.0 only with "Connection: keep-alive").
bool keeps_alive(mg_connection* conn) {
  const mg_request_info* ri = mg_get_request_info(conn);
  const char* c = mg_get_header(conn, "Connection");
  auto has = [c](const char* token) { return c && strcasestr(c, token) != nullptr; };
  if (c) return has("keep-alive") && !has("close");
  return ri && ri->http_version && std::string_view(ri->http_version) == "1.1";
}

// The response head is written here rather than with mg_response_header_*:
// CivetWeb 1.15 formats its Date header with gmtime(), whose static buffer
// concurrent workers overwrite (a race ThreadSanitizer reports, and a
// garbled Date header in practice). gmtime_r has no such buffer.
void respond(mg_connection* conn, int code, std::string_view type, std::string_view body,
             std::string_view encoding = {}, std::string_view extra_name = {}, std::string_view extra_value = {}) {
  std::string head;
  head.reserve(512);
  head.append("HTTP/1.1 ").append(std::to_string(code)).append(" ").append(mg_get_response_code_text(conn, code)).append("\r\n");
  auto add = [&head](std::string_view name, std::string_view value) {
    head.append(name).append(": ").append(value).append("\r\n");
  };
  if (const ServerContext* ctx = server_context(conn))
    for (const auto& [name, value] : ctx->headers) add(name, value);
  add("Content-Type", type);
  add("Content-Length", std::to_string(body.size()));
  add("Cache-Control", "no-store");
  add("X-Content-Type-Options", "nosniff");
  if (!encoding.empty()) {
    add("Content-Encoding", encoding);
    add("Vary", "Accept-Encoding");
  }
  if (!extra_name.empty()) add(extra_name, extra_value);
  const time_t now = ::time(nullptr);
  struct tm tm {};
  char date[64];
  if (gmtime_r(&now, &tm) && std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm) > 0) add("Date", date);
  add("Connection", keeps_alive(conn) ? "keep-alive" : "close");
  head.append("\r\n");
  const mg_request_info* ri = mg_get_request_info(conn);
  const bool is_head = ri && ri->request_method && std::string_view(ri->request_method) == "HEAD";
  if (is_head || body.empty()) {
    mg_write(conn, head.data(), head.size());
  } else if (body.size() < 16384) {  // one write, one TCP segment for small bodies
    head.append(body);
    mg_write(conn, head.data(), head.size());
  } else {
    mg_write(conn, head.data(), head.size());
    mg_write(conn, body.data(), body.size());
  }
}

// Compresses when the client accepts gzip and the body is worth it.
void respond_maybe_gzip(mg_connection* conn, std::string_view type, const std::string& body) {
  const char* ae = mg_get_header(conn, "Accept-Encoding");
  if (ae && body.size() > 512 && accepts_gzip(ae)) {
    std::string z;
    if (gzip_compress(body, z)) return respond(conn, 200, type, z, "gzip");
  }
  respond(conn, 200, type, body);
}

// A scrape's body (megabytes at thousands of cgroups, more with the full
// profile) is built in the worker thread's own malloc arena, which keeps that
// peak after the body is freed: measured 6 MB -> 83 MB RSS after 16
// concurrent scrapes of 310 cgroups with every stat key. Returning free pages
// after each response keeps RSS at the working set.
void release_freed_memory() { malloc_trim(0); }

void error(mg_connection* conn, int code, std::string_view message) {
  respond(conn, code, "text/plain; charset=utf-8", std::string(message) + "\n");
}

// A route with an exact path. Methods it does not implement get 405 with an
// Allow header; any other path under it gets 404.
class Route : public CivetHandler {
 public:
  Route(std::string path, bool get, bool post) : path_(std::move(path)), get_(get), post_(post) {}
  const std::string& path() const noexcept { return path_; }
  bool handleGet(CivetServer*, mg_connection* c) override { return dispatch(c, get_, [&] { get(c); }); }
  bool handleHead(CivetServer*, mg_connection* c) override { return dispatch(c, get_, [&] { get(c); }); }
  bool handlePost(CivetServer*, mg_connection* c) override { return dispatch(c, post_, [&] { post(c); }); }
  bool handlePut(CivetServer*, mg_connection* c) override { return dispatch(c, false, [] {}); }
  bool handleDelete(CivetServer*, mg_connection* c) override { return dispatch(c, false, [] {}); }
  bool handleOptions(CivetServer*, mg_connection* c) override { return dispatch(c, false, [] {}); }
  bool handlePatch(CivetServer*, mg_connection* c) override { return dispatch(c, false, [] {}); }

 protected:
  virtual void get(mg_connection*) {}
  virtual void post(mg_connection*) {}

 private:
  template <typename Fn>
  bool dispatch(mg_connection* c, bool allowed, Fn&& fn) {
    if (uri_of(c) != path_) {
      error(c, 404, "404 page not found");
    } else if (!allowed) {
      const std::string allow = std::string(get_ ? "GET, HEAD" : "") + (get_ && post_ ? ", " : "") + (post_ ? "POST" : "");
      respond(c, 405, "text/plain; charset=utf-8", "405 method not allowed\n", {}, "Allow", allow);
    } else {
      fn();
    }
    return true;
  }
  std::string path_;
  bool get_, post_;
};

template <typename Get>
class GetRoute final : public Route {
 public:
  GetRoute(std::string path, Get fn) : Route(std::move(path), true, false), fn_(std::move(fn)) {}
  void get(mg_connection* c) override { fn_(c); }

 private:
  Get fn_;
};

template <typename Get>
std::unique_ptr<Route> get_route(std::string path, Get fn) {
  return std::make_unique<GetRoute<Get>>(std::move(path), std::move(fn));
}

class RefreshRoute final : public Route {
 public:
  explicit RefreshRoute(WebBackend& b) : Route("/api/v1/refresh", false, true), b_(b) {}
  void post(mg_connection* c) override {
    if (!b_.config()->web.refresh_api) return error(c, 403, "the refresh API is disabled: set [web] refresh_api = true");
    const mg_request_info* ri = mg_get_request_info(c);
    std::string glob;
    if (!ri->query_string || !CivetServer::getParam(ri->query_string, "cgroup", glob))
      return error(c, 400, "missing ?cgroup=GLOB");
    std::string err;
    auto g = config::Glob::compile(glob, &err);
    if (!g) return error(c, 400, "invalid glob: " + err);
    uint64_t matching = 0;
    // Held in a local: in `for (v : snapshot()->cgroups)` the shared_ptr
    // temporary dies before the loop runs, and a pass publishing meanwhile
    // frees the snapshot under it (found by the TSan concurrency test).
    const auto snap = b_.snapshot();
    for (const auto& v : snap->cgroups) matching += g->matches(v.id->path) ? 1u : 0u;
    b_.request_refresh(*g);
    std::string body = "{\"status\":\"accepted\",\"cgroup\":";
    append_json_escaped(body, glob);
    body += ",\"matching\":" + std::to_string(matching) + "}\n";
    respond(c, 202, "application/json", body);
  }

 private:
  WebBackend& b_;
};

// Every path needs valid credentials when basic_auth_users is set (as with
// Prometheus' own exporters); a failure gets 401 and a challenge.
class AuthHandler final : public CivetAuthHandler {
 public:
  explicit AuthHandler(std::map<std::string, std::string> users) : auth_(std::move(users)) {}
  bool authorize(CivetServer*, mg_connection* c) override {
    const char* h = mg_get_header(c, "Authorization");
    if (auth_.check(h ? h : "")) return true;
    respond(c, 401, "text/plain; charset=utf-8", "401 unauthorized\n", {}, "WWW-Authenticate",
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

struct HttpServer::Handlers {
  std::vector<std::unique_ptr<Route>> routes;
  ServerContext context;
  std::unique_ptr<AuthHandler> auth;
};

std::string civetweb_ports(const std::vector<std::string>& listen, bool ipv6_available, bool tls) {
  std::string out;
  for (const auto& a : listen) {
    if (!out.empty()) out += ",";
    // ":PORT" means every address: "+PORT" binds [::] accepting IPv4 too.
    if (a.starts_with(':'))
      out += (ipv6_available ? "+" : "") + a.substr(1);
    else
      out += a;
    if (tls) out += "s";  // CivetWeb: this port speaks TLS only
  }
  return out;
}

HttpServer::HttpServer(const config::WebConfig& web, WebBackend& backend, const WebConfigFile* web_file)
    : handlers_(std::make_unique<Handlers>()) {
  const bool ipv6 = mg_check_feature(8) != 0 && ::access("/proc/net/if_inet6", F_OK) == 0;
  const bool tls = web_file && web_file->tls;
  const std::string ports = civetweb_ports(web.listen, ipv6, tls);
  std::vector<std::string> options = {
      "listening_ports", ports,
      "num_threads", std::to_string(web.max_connections),
      // CivetWeb applies this to the whole request head, not per read: a client
      // trickling bytes is cut off like a silent one.
      "request_timeout_ms", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(web.request_timeout).count()),
      "max_request_size", "16384",        // request line + headers
      "enable_keep_alive", "yes",
      "keep_alive_timeout_ms", "60000",   // Prometheus reuses its connection between scrapes
      "enable_directory_listing", "no",
      // Paths are matched exactly as sent: decoded, "/metrics%00.txt" would
      // be cut at the NUL and served as /metrics. None of ours needs escapes.
      "decode_url", "no",
  };
  std::unique_ptr<JoinedPem> pem;
  if (tls) {
    const TlsServerConfig& t = web_file->tls_server;
    if (!mg_check_feature(MG_FEATURES_SSL)) throw std::runtime_error("this CivetWeb build has no TLS support");
    pem = std::make_unique<JoinedPem>(t.key_file, t.cert_file);
    // ssl_protocol_version: 2 = TLS 1.0 and newer ... 5 = TLS 1.3 only.
    options.insert(options.end(), {"ssl_certificate", pem->path(), "ssl_certificate_chain", t.cert_file,
                                   "ssl_protocol_version", std::to_string(t.min_version - 8)});
    if (t.client_auth != ClientAuth::none)
      options.insert(options.end(), {"ssl_verify_peer", t.client_auth == ClientAuth::require_and_verify ? "yes" : "optional",
                                     "ssl_ca_file", t.client_ca_file, "ssl_default_verify_paths", "no"});
  }
  if (web_file) handlers_->context.headers = web_file->headers;
  auto& r = handlers_->routes;
  WebBackend* b = &backend;
  r.push_back(get_route("/metrics", [b, cache = std::make_shared<ScrapeCache>()](mg_connection* c) {
    const auto t0 = std::chrono::steady_clock::now();
    auto snap = b->snapshot();
    const auto cfg = b->config();
    const char* ae = mg_get_header(c, "Accept-Encoding");
    // One body per snapshot (and configuration), shared by the scrapes that
    // come while it is the latest; written straight from the snapshot
    // (render_text: prometheus-cpp's bytes without a ClientMetric per sample).
    const ProcessStats proc = read_process_stats();
    const ScrapeContext ctx{*snap, b->now(), b->status(), proc, MEMCG_VERSION, MEMCG_REVISION,
                            cfg->metrics.identity_labels, cfg->metrics.profile,
                            cfg->collector.max_stat_reads_per_second > 0};
    const auto body = cache->get(*snap, {snap->pass, cfg.get()}, ae && accepts_gzip(ae),
                                 {[&](std::string& out) { render_identity(ctx, out); },
                                  [&](std::string& out) { render_values(ctx, out); }});
    respond(c, 200, kTextFormat, *body.bytes, body.gzip ? "gzip" : "");
    cache->drop_before(b->snapshot()->pass);  // superseded while we sent it: free it now
    release_freed_memory();
    b->status().last_scrape_seconds.store(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }));
  r.push_back(get_route("/-/healthy", [b](mg_connection* c) {
    if (b->healthy()) respond(c, 200, "text/plain; charset=utf-8", "OK\n");
    else error(c, 503, "collector loop is not making progress");
  }));
  r.push_back(get_route("/-/ready", [b](mg_connection* c) {
    if (b->ready()) respond(c, 200, "text/plain; charset=utf-8", "OK\n");
    else error(c, 503, "first collection pass not done yet");
  }));
  r.push_back(get_route("/api/v1/cgroups", [b](mg_connection* c) {
    auto snap = b->snapshot();
    std::string body;
    render_snapshot_json(*snap, b->now(), body, false);
    body.push_back('\n');
    respond_maybe_gzip(c, "application/json", body);
    body = std::string();
    release_freed_memory();
  }));
  r.push_back(std::make_unique<RefreshRoute>(backend));
  r.push_back(get_route("/", [b](mg_connection* c) {
    respond(c, 200, "text/html; charset=utf-8", render_landing_page(*b->snapshot(), *b->config(), b->now()));
  }));

  try {
    server_ = std::make_unique<CivetServer>(options, nullptr, &handlers_->context);
  } catch (const CivetException& e) {
    throw std::runtime_error(std::string("cannot listen on ") + ports + (tls ? " with TLS" : "") + ": " + e.what());
  }
  if (!server_->getContext())
    throw std::runtime_error("cannot listen on " + ports + (tls ? " with TLS" : ""));
  if (web_file && !web_file->basic_auth_users.empty()) {
    handlers_->auth = std::make_unique<AuthHandler>(web_file->basic_auth_users);
    server_->addAuthHandler("/", handlers_->auth.get());  // a prefix: every path
  }
  // "/" is registered last so the specific routes take their paths.
  for (auto& route : r) server_->addHandler(route->path(), route.get());
}

namespace {

// Opens and drops a TCP connection to a local port, to wake CivetWeb's master
// thread out of poll().
void poke(int port, bool ipv6) {
  const int fd = ::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  if (ipv6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    a.sin6_addr = in6addr_loopback;
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  ::close(fd);
}

}  // namespace

HttpServer::~HttpServer() {
  if (!server_) return;
  // mg_stop() waits for CivetWeb's master thread, which polls its listening
  // sockets in 2 s quanta (SOCKET_TIMEOUT_QUANTUM in civetweb.c), so a plain
  // stop takes up to 2 s. Connecting to our own ports wakes the poll at once.
  // (Addresses not reachable over loopback still stop, just within 2 s.)
  const auto ports = this->ports();
  std::atomic<bool> done{false};
  std::thread stopper([&] {
    server_->close();
    done = true;
  });
  for (int i = 0; i < 40 && !done; ++i) {
    for (const auto& p : ports) {
      poke(p.port, false);
      if (p.ipv6) poke(p.port, true);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  stopper.join();
}

std::vector<ListenPort> HttpServer::ports() const {
  std::vector<ListenPort> out;
  for (const auto& p : server_->getListeningPortsFull()) out.push_back({p.port, p.protocol == 3});
  return out;
}

}  // namespace memcg::exporter
