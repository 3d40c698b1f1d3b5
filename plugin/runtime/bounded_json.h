// JSON from outside the daemon (OCI hook input, hook records, Engine API
// answers) is hostile: sizes and nesting are bounded before parsing, and
// values are cut to printable UTF-8 before they become labels.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace memcg::runtime {

inline constexpr int kMaxJsonDepth = 32;
inline constexpr size_t kMaxValueBytes = 253;  // longest kept value (a DNS name)

// Whether `s` nests objects/arrays at most kMaxJsonDepth deep (checked before
// parsing, so no parser recursion or destruction depth depends on the input).
bool json_depth_ok(std::string_view s) noexcept;

// `s` parsed as a JSON object of at most `max` bytes; nullopt with `error`
// ("<what> larger than ...", "... nested deeper ...", "... not a JSON object").
std::optional<nlohmann::json> parse_bounded_object(std::string_view s, size_t max, const char* what,
                                                   std::string& error);

// A printable value of at most `max` bytes, cut at a character boundary;
// control characters and bytes that are not UTF-8 dropped (a value cut inside
// a character could not be written back as JSON: found by fuzzing).
std::string clean_value(std::string_view v, size_t max = kMaxValueBytes);

// j[key] when it is a string, else "".
std::string json_string(const nlohmann::json& j, const char* key);

}  // namespace memcg::runtime
