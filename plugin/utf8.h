// UTF-8 validation for what we print. cgroup names are arbitrary bytes (only
// '/' and NUL are excluded) and anyone with a delegated subtree can create
// one; Prometheus rejects a whole scrape whose label values are not UTF-8,
// and JSON requires it. Writers replace each invalid byte with U+FFFD.
#pragma once

#include <cstddef>
#include <string_view>

namespace memcg {

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// Length (1-4) of the well-formed UTF-8 sequence at s[i], or 0 if the bytes
// there are not one (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF).
inline size_t utf8_sequence_length(std::string_view s, size_t i) noexcept {
  const auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = b(0);
  const auto cont = [&](size_t k) { return (b(k) & 0xC0u) == 0x80u; };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned c1 = b(1);
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F)) return 0;  // overlong, surrogate
    return cont(1) && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned c1 = b(1);
    if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return 0;  // overlong, > U+10FFFF
    return cont(1) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// C0 controls and DEL: a cgroup name may hold them (ESC, CR, BEL...), and
// printed raw they rewrite a terminal or forge a log line. Writers escape or
// replace them (logs: \xNN; /metrics and the status page: U+FFFD; JSON: \u00NN).
inline constexpr bool is_control(unsigned char c) noexcept { return c < 0x20 || c == 0x7f; }

}  // namespace memcg
