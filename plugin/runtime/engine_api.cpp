#include "plugin/runtime/engine_api.h"

#include <charconv>

#include "base/parse/http_text.h"
#include "plugin/runtime/bounded_json.h"
#include "plugin/runtime/identity.h"

namespace memcg::runtime {
namespace {

using parse::iequals;

// Chunked transfer coding (RFC 9112, 7.1): hex size [;ext] CRLF data CRLF ...
// 0 CRLF [trailers] CRLF. A reply cut short is an error, not a shorter body.
std::optional<std::string> dechunk(std::string_view s, bool eof, std::string& error) {
  std::string out;
  const auto short_body = [&] {
    if (eof) error = "chunked body cut short";
    return std::nullopt;
  };
  for (;;) {
    const size_t eol = s.find("\r\n");
    if (eol == std::string_view::npos) return short_body();
    std::string_view size_text = s.substr(0, eol);
    if (const size_t semi = size_text.find(';'); semi != std::string_view::npos) size_text = size_text.substr(0, semi);
    size_text = parse::trim_ows(size_text);
    size_t size = 0;
    auto [p, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (ec != std::errc() || p != size_text.data() + size_text.size() || size_text.empty()) {
      error = "bad chunk size";
      return std::nullopt;
    }
    s.remove_prefix(eol + 2);
    if (size == 0) {  // the last chunk; trailers (not needed) end with an empty line
      if (s.starts_with("\r\n") || s.find("\r\n\r\n") != std::string_view::npos) return out;
      return short_body();
    }
    if (size > s.size() || s.size() - size < 2) return short_body();
    if (s.substr(size, 2) != "\r\n") {
      error = "bad chunk framing";
      return std::nullopt;
    }
    out.append(s.substr(0, size));
    s.remove_prefix(size + 2);
  }
}

// "HTTP/1.1 200 OK" -> 200, or nullopt with `error`.
std::optional<int> parse_status_line(std::string_view line, std::string& error) {
  if (!line.starts_with("HTTP/1.") || line.size() < 12 || line[8] != ' ') {
    error = "not an HTTP/1.x reply";
    return std::nullopt;
  }
  int status = 0;
  auto [p, ec] = std::from_chars(line.data() + 9, line.data() + 12, status);
  if (ec != std::errc() || p != line.data() + 12 || (line.size() > 12 && line[12] != ' ') || status < 100 || status > 599) {
    error = "bad HTTP status";
    return std::nullopt;
  }
  return status;
}

// How the body is framed, from the header fields after the status line.
struct Framing {
  bool chunked = false;
  std::optional<size_t> length;
};
std::optional<Framing> parse_framing(std::string_view fields, std::string& error) {
  Framing f;
  while (!fields.empty()) {
    const size_t eol = fields.find("\r\n");
    const std::string_view line = fields.substr(0, eol);
    fields = eol == std::string_view::npos ? std::string_view{} : fields.substr(eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = parse::trim_ows(line.substr(0, colon)), value = parse::trim_ows(line.substr(colon + 1));
    if (iequals(name, "transfer-encoding")) {
      f.chunked = iequals(value, "chunked");
      if (!f.chunked) {
        error = "unsupported transfer coding";
        return std::nullopt;
      }
    } else if (iequals(name, "content-length")) {
      size_t n = 0;
      auto [q, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || q != value.data() + value.size() || (f.length && *f.length != n)) {
        error = "bad Content-Length";
        return std::nullopt;
      }
      f.length = n;
    }
  }
  return f;
}

// The body as framed; nullopt while more may come (error set once `eof`
// says it will not).
std::optional<std::string> take_body(std::string_view body, const Framing& f, bool eof, std::string& error) {
  if (f.chunked) return dechunk(body, eof, error);
  if (f.length) {
    if (body.size() < *f.length) {
      if (eof) error = "body shorter than Content-Length";
      return std::nullopt;
    }
    return std::string(body.substr(0, *f.length));
  }
  if (!eof) return std::nullopt;
  return std::string(body);
}

}  // namespace

std::string engine_inspect_request(std::string_view id) {
  std::string r = "GET /containers/";
  r.append(id);
  r.append("/json HTTP/1.1\r\nHost: localhost\r\nUser-Agent: memcg-exporter\r\nAccept: application/json\r\n"
           "Connection: close\r\n\r\n");
  return r;
}

std::optional<HttpReply> parse_http_reply(std::string_view raw, bool eof, std::string& error) {
  error.clear();
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    if (eof) error = "no complete HTTP header";
    return std::nullopt;
  }
  const std::string_view head = raw.substr(0, head_end), body = raw.substr(head_end + 4);
  const size_t line_end = head.find("\r\n");
  HttpReply reply;
  const auto status = parse_status_line(head.substr(0, line_end), error);
  if (!status) return std::nullopt;
  reply.status = *status;
  const auto framing = parse_framing(line_end == std::string_view::npos ? std::string_view{} : head.substr(line_end + 2), error);
  if (!framing) return std::nullopt;
  auto taken = take_body(body, *framing, eof, error);
  if (!taken) return std::nullopt;
  reply.body = std::move(*taken);
  return reply;
}

// GCC 12 sees a null object pointer in nlohmann's iterators where the
// optional holds a value (a false positive of -Wnull-dereference).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
std::optional<ContainerRecord> parse_inspect(std::string_view json, std::string_view id, std::string& error) {
  auto doc = parse_bounded_object(json, kMaxEngineReplyBytes, "inspect reply", error);
  if (!doc) return std::nullopt;
  if (json_string(*doc, "Id") != id) {
    error = "inspect reply is about another container";
    return std::nullopt;
  }
  ContainerRecord r;
  r.id = std::string(id);
  std::string name = json_string(*doc, "Name");
  if (name.starts_with('/')) name.erase(0, 1);
  auto config = doc->find("Config");
  const nlohmann::json* labels = nullptr;
  if (config != doc->end() && config->is_object()) {
    r.image = clean_value(json_string(*config, "Image"), kMaxImageBytes);
    auto l = config->find("Labels");
    if (l != config->end() && l->is_object()) labels = &*l;
  }
  // cri-dockerd (Kubernetes on Docker) names containers k8s_<...>; its labels
  // say what Kubernetes calls them.
  const auto label = [&](const char* key) { return labels ? clean_value(json_string(*labels, key)) : std::string(); };
  r.name = label("io.kubernetes.container.name");
  if (r.name.empty()) r.name = clean_value(name);
  r.pod = label("io.kubernetes.pod.name");
  r.namespace_ = label("io.kubernetes.pod.namespace");
  r.pod_uid = canonical_uuid(label("io.kubernetes.pod.uid"));
  return r;
}

#pragma GCC diagnostic pop

}  // namespace memcg::runtime
