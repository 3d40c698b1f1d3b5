#include "exporter/http_response.h"

#include <CivetServer.h>
#include <malloc.h>

#include <cstring>
#include <ctime>

#include "exporter/gzip.h"

namespace memcg::exporter {
namespace {

constexpr size_t kCoalesceBelow = 16384;  // head and body in one write below this

}  // namespace

std::string_view uri_of(mg_connection* conn) {
  const mg_request_info* ri = mg_get_request_info(conn);
  return ri && ri->local_uri ? ri->local_uri : "";
}

namespace {

const ServerContext* server_context(mg_connection* conn) {
  auto* server = static_cast<const CivetServer*>(mg_get_user_data(mg_get_context(conn)));
  return server ? static_cast<const ServerContext*>(server->getUserContext()) : nullptr;
}

}  // namespace

// The response head is written here rather than with mg_response_header_*:
// CivetWeb 1.15 formats its Date header with gmtime(), whose static buffer
// concurrent workers overwrite (a race ThreadSanitizer reports, and a
// garbled Date header in practice). gmtime_r has no such buffer.
void respond(mg_connection* conn, int code, std::string_view type, std::string_view body, std::string_view encoding,
             std::string_view extra_name, std::string_view extra_value) {
  std::string head;
  head.reserve(512);
  head.append("HTTP/1.1 ").append(std::to_string(code)).append(" ").append(mg_get_response_code_text(conn, code)).append("\r\n");
  auto add = [&head](std::string_view name, std::string_view value) {
    head.append(name).append(": ").append(value).append("\r\n");
  };
  // Held for the loop: a reload may swap the context's settings meanwhile
  // (a range-for would not keep the temporary pointer alive).
  if (const ServerContext* ctx = server_context(conn)) {
    const auto settings = ctx->settings();
    for (const auto& [name, value] : settings->headers) add(name, value);
  }
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
  // One request per connection from the gate, which says the client's own
  // keep-alive (connection_gate.h).
  add("Connection", "close");
  head.append("\r\n");
  const mg_request_info* ri = mg_get_request_info(conn);
  const bool is_head = ri && ri->request_method && std::string_view(ri->request_method) == "HEAD";
  if (is_head || body.empty()) {
    mg_write(conn, head.data(), head.size());
  } else if (body.size() < kCoalesceBelow) {  // one write, one TCP segment for small bodies
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

}  // namespace memcg::exporter
