// The project's own HTTP request and response, so that routes (routes.h)
// and authorization are plain functions of a Request: unit-tested without
// sockets, and the server library appears only in its adapter (server.cpp).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memcg::exporter {

enum class Method { get, head, post, other };
Method method_of(std::string_view name) noexcept;

struct Header {
  std::string_view name, value;
};

// A request as the gate delivered it: whole, its strings borrowed from the
// server for the duration of the call.
struct Request {
  Method method = Method::get;
  std::string_view path;   // as sent, without the query; never URL-decoded
  std::string_view query;  // after '?', as sent
  std::span<const Header> headers;

  // The first field of that name (case-insensitive), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const noexcept;
};

// The value of `name` in a query string, decoded as a form field (%XX and
// '+'); nullopt when absent or badly escaped.
std::optional<std::string> query_param(std::string_view query, std::string_view name);

inline constexpr const char* kTextFormat = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr const char* kPlainText = "text/plain; charset=utf-8";

struct Response {
  int status = 200;
  std::string content_type = kPlainText;
  // Shared: a cached /metrics body goes out without a copy.
  std::shared_ptr<const std::string> body;
  std::string encoding;  // Content-Encoding ("gzip"), with Vary: Accept-Encoding
  std::vector<std::pair<std::string, std::string>> headers;  // Allow, Retry-After, WWW-Authenticate
  // Run by the server once the response is written (a scrape's duration,
  // freeing a body superseded meanwhile).
  std::function<void()> after_sent;

  std::string_view bytes() const noexcept { return body ? std::string_view(*body) : std::string_view(); }

  static Response make(int status, std::string_view type, std::string body);
  // A plain-text error: "message\n".
  static Response error(int status, std::string_view message);
};

}  // namespace memcg::exporter
