// The memory.stat keys this build knows, in the kernel's print order, with the
// kind each one has according to Documentation/admin-guide/cgroup-v2.rst:
//  - bytes:  an amount of memory (the docs: "All memory amounts are in bytes")
//  - events: a monotonically increasing event counter (pgfault, workingset_*, ...)
//  - count:  a plain number that can go up and down; also the kind given to
//            keys a newer kernel adds that are not in this table.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "base/parse/flat_keyed.h"
#include "base/parse/key_table.h"

namespace memcg::parse {

enum class StatKind : unsigned char { bytes, events, count };

struct StatKeyInfo {
  std::string_view name;
  StatKind kind;
};

inline constexpr size_t kStatKeyCount = 74;

std::span<const StatKeyInfo> stat_keys() noexcept;
const KeyTable& stat_key_table() noexcept;
StatKind stat_kind(size_t index) noexcept;
// The known keys of one kind, as a set: what a scrape intersects with a
// cgroup's present keys and its allowlist instead of testing each key.
const KeySet& stat_keys_of(StatKind kind) noexcept;

using StatValues = FlatKeyed<kStatKeyCount>;

}  // namespace memcg::parse
