#include "plugin/cache/pending.h"

#include <algorithm>

namespace memcg::cache {
namespace {

uint64_t abs_diff(int64_t a, int64_t b) noexcept {
  return a >= b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
                : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
}

}  // namespace

void subtree_change(std::span<const int> parent, std::span<const ProbeDelta> delta,
                    std::span<uint64_t> change, std::span<int64_t> child_current,
                    std::span<int64_t> child_swap) noexcept {
  const size_t n = parent.size();
  std::fill_n(change.begin(), n, 0);
  std::fill_n(child_current.begin(), n, 0);
  std::fill_n(child_swap.begin(), n, 0);
  // Reverse pre-order visits every child before its parent.
  for (size_t k = n; k-- > 0;) {
    const ProbeDelta& d = delta[k];
    if (d.valid) change[k] += abs_diff(d.current, child_current[k]) + abs_diff(d.swap, child_swap[k]);
    const int p = parent[k];
    if (p < 0) continue;
    const auto pi = static_cast<size_t>(p);
    change[pi] += change[k];
    if (d.valid) {
      child_current[pi] += d.current;
      child_swap[pi] += d.swap;
    }
  }
}

}  // namespace memcg::cache
