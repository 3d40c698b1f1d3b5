// Number parsing shared by the cgroupfs parsers. Kernel files print unsigned
// decimals; anything else (sign, junk, overflow) is malformed, never wrapped.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace memcg::parse {

inline std::optional<uint64_t> parse_u64(std::string_view s) noexcept {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

inline std::optional<double> parse_double(std::string_view s) noexcept {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Splits off the next '\n'-terminated line (the last line may lack the '\n').
inline bool next_line(std::string_view& rest, std::string_view& line) noexcept {
  if (rest.empty()) return false;
  const auto nl = rest.find('\n');
  if (nl == std::string_view::npos) {
    line = rest;
    rest = {};
  } else {
    line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
  }
  return true;
}

}  // namespace memcg::parse
