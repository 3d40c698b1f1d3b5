// Parser for the kernel's "flat keyed" files ("key value\n" per line), used for
// memory.stat and memory.events. Known keys land in a fixed array; keys this
// build does not know (a newer kernel) are kept by name, not dropped.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/parse/key_table.h"

namespace memcg::parse {

struct UnknownKey {
  std::string name;
  uint64_t value = 0;
  bool operator==(const UnknownKey&) const = default;
};

struct ParseResult {
  uint32_t lines = 0;      // non-empty lines seen
  uint32_t malformed = 0;  // lines skipped: no value, bad number, duplicate key
  bool ok() const noexcept { return malformed == 0; }
};

// Where a parse stores its values: one slot per table key, a presence bit per
// slot, and the keys the table does not know.
struct FlatKeyedOut {
  std::span<uint64_t> values;
  KeySet& present;
  std::vector<UnknownKey>& unknown;
};

// Values of one read of one flat-keyed file whose table has N keys.
template <size_t N>
struct FlatKeyed {
  static_assert(N <= kMaxKeys);
  std::array<uint64_t, N> values{};
  KeySet present;
  std::vector<UnknownKey> unknown;  // in file order

  std::optional<uint64_t> get(size_t index) const noexcept {
    if (index >= N || !present.test(index)) return std::nullopt;
    return values[index];
  }
  FlatKeyedOut out() noexcept { return {values, present, unknown}; }
  bool operator==(const FlatKeyed&) const = default;
};

// Parses `text` into `out`, reusing its storage: once `out` and `layout` have
// seen a file's keys, a re-read allocates nothing. Keys absent from `text` are
// cleared from `out`. Duplicate keys keep the first value (systemd's rule for
// keyed kernel attributes) and count as malformed. `out.values` must have one
// slot per key of `table`.
ParseResult parse_flat_keyed(std::string_view text, const KeyTable& table, LayoutCache& layout,
                             FlatKeyedOut out);

}  // namespace memcg::parse
