#include "base/parse/key_table.h"

#include <algorithm>
#include <cstdlib>

namespace memcg::parse {

KeyTable::KeyTable(std::span<const std::string_view> names) : names_(names) {
  if (names.size() > kMaxKeys) std::abort();
  sorted_.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) sorted_[i] = static_cast<uint16_t>(i);
  std::sort(sorted_.begin(), sorted_.end(),
            [&](uint16_t a, uint16_t b) { return names_[a] < names_[b]; });
  for (size_t i = 1; i < sorted_.size(); ++i)
    if (names_[sorted_[i - 1]] == names_[sorted_[i]]) std::abort();
}

std::optional<uint16_t> KeyTable::find(std::string_view name) const noexcept {
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), name,
                             [&](uint16_t idx, std::string_view n) { return names_[idx] < n; });
  if (it == sorted_.end() || names_[*it] != name) return std::nullopt;
  return *it;
}

}  // namespace memcg::parse
