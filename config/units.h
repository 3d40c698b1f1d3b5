// Durations ("500ms", "2s", "1m30s") and sizes ("4MiB", "512KiB", "1GB", "4096").
// Parsers return nullopt on anything they do not fully understand; the config
// loader turns that into an error with the value's source position.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memcg::config {

using Duration = std::chrono::nanoseconds;

// One or more <integer><unit> parts, units ns us ms s m h, largest first.
std::optional<Duration> parse_duration(std::string_view text);
// <integer>[unit], units B, KiB MiB GiB TiB (1024-based), kB MB GB TB (1000-based).
std::optional<uint64_t> parse_size(std::string_view text);

// A listen address: ":PORT", "HOST:PORT" or "[IPV6]:PORT", PORT 0-65535.
bool valid_listen_address(std::string_view addr, std::string& error);

std::string format_duration(Duration d);  // shortest exact form, e.g. "1m30s", "500ms"
std::string format_size(uint64_t bytes);  // exact binary unit when possible, e.g. "4MiB"

}  // namespace memcg::config
