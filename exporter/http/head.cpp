#include "exporter/http/head.h"

#include <charconv>
#include <optional>
#include <utility>
#include <vector>

#include "exporter/http/framing.h"
#include "base/parse/http_text.h"

namespace memcg::exporter {
namespace {

using parse::iequals;

// Whether a comma-separated field value holds `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) noexcept {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (iequals(parse::trim_ows(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// The end of the head (just past its blank line) in `s`, or npos.
size_t head_end(std::string_view s) noexcept {
  const size_t crlf = s.find("\r\n\r\n"), lf = s.find("\n\n");
  if (crlf == std::string_view::npos && lf == std::string_view::npos) return std::string_view::npos;
  if (lf == std::string_view::npos || (crlf != std::string_view::npos && crlf < lf)) return crlf + 4;
  return lf + 2;
}

// Calls f(line) for each line of `head` (without its line break), the
// start line first, stopping at the blank line.
template <typename F>
void for_each_line(std::string_view head, F f) {
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return;
    f(line);
    if (nl == std::string_view::npos) return;
    head.remove_prefix(nl + 1);
  }
}

// RFC 9110 5.6.2: tchar, what a method or a field name is made of.
bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (const char c : s) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
  }
  return true;
}

// RFC 9112 3: method SP request-target SP HTTP-version, nothing more. Why
// a line is refused, or nullopt; the reason never quotes what was sent.
std::optional<std::pair<int, std::string>> request_line_error(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return std::pair{400, std::string("malformed request line: want METHOD SP TARGET SP HTTP/1.x")};
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return std::pair{400, std::string("malformed request method")};
  if (target.empty()) return std::pair{400, std::string("empty request target")};
  for (const char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return std::pair{400, std::string("control character in the request target")};
  if (version == "HTTP/1.1" || version == "HTTP/1.0") return std::nullopt;
  if (version.size() == 8 && version.starts_with("HTTP/") && version[6] == '.')
    return std::pair{505, std::string("HTTP version not supported: HTTP/1.0 and HTTP/1.1 only")};
  return std::pair{400, std::string("malformed HTTP version")};
}

HeadCheck refuse(int code, std::string reason) {
  HeadCheck c;
  c.status = HeadCheck::Status::refused;
  c.code = code;
  c.reason = std::move(reason);
  return c;
}

}  // namespace

HeadCheck check_request(std::string_view in, size_t max_head, size_t max_body) {
  size_t skipped = 0;
  while (skipped < in.size() && (in[skipped] == '\r' || in[skipped] == '\n') && skipped < 64) ++skipped;
  const std::string_view rest = in.substr(skipped);
  const size_t end = head_end(rest);
  if (end == std::string_view::npos || end > max_head) {
    if (rest.size() >= max_head) return refuse(431, "request head over " + std::to_string(max_head) + " bytes");
    return {};
  }
  const std::string_view head = rest.substr(0, end);
  RequestHead h;
  h.skipped = skipped;
  h.head_len = end;
  std::vector<HeaderField> fields;
  const auto span = [head](std::string_view part) {
    return Span{static_cast<uint32_t>(part.data() - head.data()), static_cast<uint32_t>(part.size())};
  };
  std::string_view version;
  bool first = true, folded = false, bad_name = false, close = false, keep = false, te = false;
  std::optional<std::pair<int, std::string>> bad_line;
  std::string_view length;
  for_each_line(head, [&](std::string_view line) {
    if (first) {
      first = false;
      bad_line = request_line_error(line);
      const size_t sp = line.find(' '), sp2 = line.rfind(' ');
      h.is_head = line.substr(0, sp) == "HEAD";
      version = line.substr(sp2 + 1);
      if (!bad_line) h.method = span(line.substr(0, sp)), h.target = span(line.substr(sp + 1, sp2 - sp - 1));
      return;
    }
    if (line.front() == ' ' || line.front() == '\t') folded = true;
    const size_t colon = line.find(':');
    const std::string_view name = line.substr(0, colon);
    // RFC 9112 5.1: a field name is a token right before its colon.
    if (!folded && (colon == std::string_view::npos || !is_token(name))) bad_name = true;
    const std::string_view value = colon == std::string_view::npos ? line.substr(line.size()) : parse::trim_ows(line.substr(colon + 1));
    fields.emplace_back(name, value);
    h.fields.emplace_back(span(name), span(value));
    if (iequals(name, "Connection")) close |= has_token(value, "close"), keep |= has_token(value, "keep-alive");
    if (iequals(name, "Transfer-Encoding")) te = true;
    if (iequals(name, "Content-Length")) length = value;
  });
  if (bad_line) return refuse(bad_line->first, bad_line->second);
  if (folded) return refuse(400, "obsolete line folding (a header line starting with a space or tab)");
  if (bad_name) return refuse(400, "malformed header field: want a token name, a colon, its value");
  if (auto why = framing_error(fields)) return refuse(400, *why);
  if (te) return refuse(411, "Transfer-Encoding in a request: send Content-Length");
  if (!length.empty() && (std::from_chars(length.data(), length.data() + length.size(), h.body_len).ec != std::errc{}))
    return refuse(400, "malformed Content-Length");
  if (h.body_len > max_body) return refuse(413, "request body over " + std::to_string(max_body) + " bytes");
  h.keep_alive = version == "HTTP/1.1" ? !close : (version == "HTTP/1.0" && keep && !close);
  HeadCheck c;
  c.status = HeadCheck::Status::ok;
  c.head = h;
  return c;
}

std::string gate_response(int code, std::string_view reason) {
  const char* text = code == 400 ? "Bad Request" : code == 411 ? "Length Required" : code == 413 ? "Content Too Large"
                   : code == 431 ? "Request Header Fields Too Large" : code == 503 ? "Service Unavailable" : "Error";
  const std::string body = std::to_string(code) + " " + text + ": " + std::string(reason) + "\n";
  return "HTTP/1.1 " + std::to_string(code) + " " + text +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace memcg::exporter
