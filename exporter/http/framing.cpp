#include "exporter/http/framing.h"

#include "base/parse/http_text.h"

namespace memcg::exporter {
namespace {

using parse::iequals;

bool is_tchar(unsigned char c) noexcept {  // RFC 9110 5.6.2 token characters
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  for (char t : std::string_view("!#$%&'*+-.^_`|~"))
    if (c == static_cast<unsigned char>(t)) return true;
  return false;
}

}  // namespace

std::optional<std::string> framing_error(std::span<const HeaderField> fields) {
  int content_length = 0;
  bool transfer_encoding = false;
  for (const auto& [name, value] : fields) {
    if (name.empty()) return "empty header field name";
    for (char c : name)
      if (!is_tchar(static_cast<unsigned char>(c))) return "malformed header field name (obs-fold or whitespace)";
    // A bare CR or LF in a value (RFC 9110 5.5) is how a folded line shows
    // when the parser keeps it.
    if (value.find_first_of("\r\n") != std::string_view::npos) return "line break inside a header field value (obs-fold)";
    if (iequals(name, "Transfer-Encoding")) transfer_encoding = true;
    if (!iequals(name, "Content-Length")) continue;
    if (++content_length > 1) return "Content-Length repeated";
    const std::string_view v = parse::trim_ows(value);
    if (v.empty() || v.size() > 18) return "malformed Content-Length";
    for (char c : v)
      if (c < '0' || c > '9') return "malformed Content-Length";
  }
  if (content_length && transfer_encoding) return "both Content-Length and Transfer-Encoding";
  return std::nullopt;
}

}  // namespace memcg::exporter
