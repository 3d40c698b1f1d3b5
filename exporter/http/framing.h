// Request framing that RFC 9112 says a server must reject (and close the
// connection on), checked before any handler runs: harmless without a proxy
// in front, request smuggling with one.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace memcg::exporter {

using HeaderField = std::pair<std::string_view, std::string_view>;  // name, value as parsed

// Why the request head is ambiguous, or nullopt: both Content-Length and
// Transfer-Encoding (RFC 9112 6.1), Content-Length repeated or not a single
// decimal number (6.3: "Content-Length: 0 46"), a field name that is empty
// or holds whitespace or other non-token characters (5.1; where an obs-fold
// continuation line ends up).
std::optional<std::string> framing_error(std::span<const HeaderField> fields);

}  // namespace memcg::exporter
