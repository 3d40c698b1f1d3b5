// Writing a Response (request.h) as HTTP/1.1: the head is built here rather
// than by the server library (see response_head), extra headers from the web
// config are added to every response, and gzip is applied when the client
// accepts it. Pure but for release_freed_memory: the gate writes the bytes.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exporter/http/request.h"

namespace memcg::exporter {

class BasicAuth;

// What the web config file says of every request: the extra response
// headers (http_server_config.headers) and basic auth (null: none). A reload
// swaps it whole; a request uses the one it started with.
struct WebSettings {
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<BasicAuth> auth;
};

// The reason phrase of a status code (RFC 9110's), "" for one we never send.
std::string_view reason_phrase(int status) noexcept;

// The whole head: status line; the web config's headers; Content-Type,
// Content-Length, Cache-Control, X-Content-Type-Options; Content-Encoding
// and Vary when encoded; the response's own headers; Date (at `now`);
// Connection: keep-alive or close; blank line.
std::string response_head(const Response& r, const WebSettings& settings, std::time_t now, bool keep_alive);

// Whether the body follows the head: not for HEAD (whose Content-Length is
// that of the GET it stands for), not when empty.
bool sends_body(const Request& req, const Response& r) noexcept;

// Compresses `r`'s body when the client accepts gzip and it is worth it.
void gzip_if_accepted(const Request& req, Response& r);

// Returns the memory a response freed to the kernel (see the definition).
void release_freed_memory();

}  // namespace memcg::exporter
