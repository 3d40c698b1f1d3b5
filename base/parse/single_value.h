// Single-value files: memory.current, memory.swap.current, memory.peak and the
// limits memory.min/low/high/max, memory.swap.max, where "max" means unlimited.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace memcg::parse {

struct SingleValue {
  uint64_t value = 0;
  bool unlimited = false;  // the file said "max"
  bool operator==(const SingleValue&) const = default;
};

// Accepts one value with an optional trailing newline; nullopt if malformed.
std::optional<SingleValue> parse_single_value(std::string_view text) noexcept;

}  // namespace memcg::parse
