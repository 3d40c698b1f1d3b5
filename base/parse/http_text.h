// Text helpers for HTTP heads, shared by the exporter's connection gate and
// the Engine API client. Locale-free: header names are ASCII tokens.
#pragma once

#include <string_view>

namespace memcg::parse {

inline char ascii_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Case-insensitive equality of two ASCII strings (header names, tokens).
inline bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  return true;
}

// A field value without its optional whitespace (RFC 9110 5.5: SP and HTAB)
// and without a line's trailing CR.
inline std::string_view trim_ows(std::string_view v) noexcept {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

}  // namespace memcg::parse
