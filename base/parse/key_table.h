// A fixed table of the keys a flat-keyed cgroup file is known to contain.
// Lookup is by binary search over a sorted index built once; the parsers avoid
// even that in steady state with a LayoutCache (kernel files keep their order).
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace memcg::parse {

inline constexpr size_t kMaxKeys = 128;
using KeySet = std::bitset<kMaxKeys>;

class KeyTable {
 public:
  // `names` must outlive the table (use static storage). Duplicate names are a
  // programming error and abort at construction.
  explicit KeyTable(std::span<const std::string_view> names);

  size_t size() const noexcept { return names_.size(); }
  std::string_view name(size_t index) const noexcept { return names_[index]; }
  std::optional<uint16_t> find(std::string_view name) const noexcept;

 private:
  std::span<const std::string_view> names_;
  std::vector<uint16_t> sorted_;  // indexes into names_, ordered by name
};

// Remembers which key stood on which line of the previous read, so a re-read of
// an unchanged layout costs one string compare per line. A kernel that adds a
// key in the middle just falls back to the lookup for the lines after it.
struct LayoutCache {
  static constexpr uint16_t kUnknown = 0xffff;
  std::vector<uint16_t> line_key;  // grows to the file's line count once
};

}  // namespace memcg::parse
