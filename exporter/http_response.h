// Writing HTTP responses for the endpoints (http_routes.h): the head is
// written here rather than by CivetWeb (see respond()), extra headers from
// the web config are added to every response, and gzip is applied when the
// client accepts it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct mg_connection;

namespace memcg::exporter {

inline constexpr const char* kTextFormat = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr const char* kPlainText = "text/plain; charset=utf-8";

class BasicAuth;

// What the web config file says of every request: the extra response
// headers (http_server_config.headers) and basic auth (null: none). A reload
// swaps it whole; a request uses the one it started with.
struct WebSettings {
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<BasicAuth> auth;
};

// Reached through CivetServer's user context.
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

// The request's path as sent (no URL decoding).
std::string_view uri_of(mg_connection* conn);

// A complete response: status line, headers (Content-Type, Content-Length,
// Date, Connection, the web config's; `encoding` adds Content-Encoding and
// Vary; one extra header by name), and the body unless the request was HEAD.
void respond(mg_connection* conn, int code, std::string_view type, std::string_view body,
             std::string_view encoding = {}, std::string_view extra_name = {}, std::string_view extra_value = {});
// A plain-text error response: "message\n".
void error(mg_connection* conn, int code, std::string_view message);
// 200 with `body`, gzip-compressed when the client accepts it and it is worth it.
void respond_maybe_gzip(mg_connection* conn, std::string_view type, const std::string& body);

// Returns the memory a response freed to the kernel (see the definition).
void release_freed_memory();

}  // namespace memcg::exporter
