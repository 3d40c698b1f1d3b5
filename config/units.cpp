#include "config/units.h"

#include <array>
#include <charconv>
#include <limits>

namespace memcg::config {
namespace {

template <typename Unit>
struct UnitDef {
  std::string_view name;
  Unit scale;
};

constexpr std::array<UnitDef<int64_t>, 6> kDurationUnits{{
    {"h", 3'600'000'000'000}, {"m", 60'000'000'000}, {"s", 1'000'000'000},
    {"ms", 1'000'000}, {"us", 1'000}, {"ns", 1},
}};

constexpr std::array<UnitDef<uint64_t>, 9> kSizeUnits{{
    {"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10},
    {"TB", 1'000'000'000'000}, {"GB", 1'000'000'000}, {"MB", 1'000'000}, {"kB", 1'000}, {"B", 1},
}};

// Reads the leading decimal digits of `s`; advances `s` past them.
std::optional<uint64_t> take_number(std::string_view& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc{} || end == s.data()) return std::nullopt;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return v;
}

std::string_view take_unit(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && (s[n] < '0' || s[n] > '9')) ++n;
  auto unit = s.substr(0, n);
  s.remove_prefix(n);
  return unit;
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int64_t total = 0;
  size_t last_unit = 0;  // units must appear largest first, each at most once
  while (!text.empty()) {
    auto n = take_number(text);
    if (!n) return std::nullopt;
    auto unit = take_unit(text);
    size_t i = 0;
    while (i < kDurationUnits.size() && kDurationUnits[i].name != unit) ++i;
    if (i == kDurationUnits.size() || (total != 0 && i <= last_unit) ) return std::nullopt;
    last_unit = i;
    const auto scale = kDurationUnits[i].scale;
    if (*n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / scale)) return std::nullopt;
    const int64_t part = static_cast<int64_t>(*n) * scale;
    if (total > std::numeric_limits<int64_t>::max() - part) return std::nullopt;
    total += part;
  }
  return Duration{total};
}

std::optional<uint64_t> parse_size(std::string_view text) {
  auto n = take_number(text);
  if (!n) return std::nullopt;
  if (text.empty()) return *n;
  for (const auto& u : kSizeUnits) {
    if (u.name != text) continue;
    if (*n > std::numeric_limits<uint64_t>::max() / u.scale) return std::nullopt;
    return *n * u.scale;
  }
  return std::nullopt;
}

bool valid_listen_address(std::string_view addr, std::string& error) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) {
    error = "\"" + std::string(addr) + "\" needs a port, e.g. \":9756\" or \"127.0.0.1:9756\"";
    return false;
  }
  std::string_view host = addr.substr(0, colon), port = addr.substr(colon + 1);
  uint64_t p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || p > 65535) {
    error = "invalid port \"" + std::string(port) + "\" in \"" + std::string(addr) + "\"";
    return false;
  }
  if (host.starts_with('[') != host.ends_with(']') || (host.find(':') != std::string_view::npos && !host.starts_with('['))) {
    error = "write IPv6 addresses in brackets, e.g. \"[::1]:9756\"";
    return false;
  }
  return true;
}

std::string format_duration(Duration d) {
  int64_t ns = d.count();
  if (ns == 0) return "0s";
  std::string out;
  if (ns < 0) {
    out = "-";
    ns = -ns;
  }
  // Sub-second durations print in one unit ("250ms"); longer ones as h/m/s parts.
  if (ns < 1'000'000'000 || ns % 1'000'000'000 != 0) {
    for (size_t i = 2; i < kDurationUnits.size(); ++i)
      if (ns % kDurationUnits[i].scale == 0)
        return out + std::to_string(ns / kDurationUnits[i].scale) + std::string(kDurationUnits[i].name);
  }
  for (size_t i = 0; i < 3; ++i) {
    const auto scale = kDurationUnits[i].scale;
    if (ns >= scale) {
      out += std::to_string(ns / scale) + std::string(kDurationUnits[i].name);
      ns %= scale;
    }
  }
  return out;
}

std::string format_size(uint64_t bytes) {
  for (size_t i = 0; i < 4; ++i)
    if (bytes != 0 && bytes % kSizeUnits[i].scale == 0)
      return std::to_string(bytes / kSizeUnits[i].scale) + std::string(kSizeUnits[i].name);
  return std::to_string(bytes) + "B";
}

}  // namespace memcg::config
