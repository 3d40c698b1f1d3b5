#include "exporter/http/request.h"

#include "base/parse/http_text.h"

namespace memcg::exporter {

Method method_of(std::string_view name) noexcept {
  if (name == "GET") return Method::get;
  if (name == "HEAD") return Method::head;
  if (name == "POST") return Method::post;
  return Method::other;
}

std::optional<std::string_view> Request::header(std::string_view name) const noexcept {
  for (const Header& h : headers)
    if (parse::iequals(h.name, name)) return h.value;
  return std::nullopt;
}

namespace {

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> form_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out.push_back(' ');
    } else if (in[i] != '%') {
      out.push_back(in[i]);
    } else {
      if (i + 2 >= in.size()) return std::nullopt;
      const int hi = hex_digit(in[i + 1]), lo = hex_digit(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view field = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = field.find('=');
    if (field.substr(0, eq) != name) continue;
    return form_decode(eq == std::string_view::npos ? std::string_view() : field.substr(eq + 1));
  }
  return std::nullopt;
}

Response Response::make(int status, std::string_view type, std::string body) {
  Response r;
  r.status = status;
  r.content_type = type;
  r.body = std::make_shared<const std::string>(std::move(body));
  return r;
}

Response Response::error(int status, std::string_view message) {
  return make(status, kPlainText, std::string(message) + "\n");
}

}  // namespace memcg::exporter
