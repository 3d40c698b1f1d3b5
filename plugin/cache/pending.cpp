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
  // Cleared word by word in one loop: as three std::fill_n the compiler
  // calls memset for each (8 KB each at 1,000 cgroups, every pass), which
  // glibc does with `rep stosb` at these sizes: the instruction the guests'
  // profiles found costly in the scrape's memset (docs/performance.md).
  for (size_t k = 0; k < n; ++k) {
    change[k] = 0;
    child_current[k] = 0;
    child_swap[k] = 0;
    __asm__("" ::: "memory");  // keeps the loop a loop, not three memsets
  }
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

void SparseSubtreeChange::reset(size_t n) {
  if (change_.size() != n) {
    change_.assign(n, 0);
    child_current_.assign(n, 0);
    child_swap_.assign(n, 0);
    seen_.assign(n, 0);
    touched_.clear();
    return;
  }
  for (uint32_t k : touched_) change_[k] = 0;
  touched_.clear();
}

std::span<const uint64_t> SparseSubtreeChange::compute(std::span<const int> parent, std::span<const ProbeDelta> delta,
                                                       std::span<const uint32_t> moving) {
  reset(parent.size());
  candidates_.clear();
  const auto consider = [&](uint32_t k) {
    if (!seen_[k]) {
      seen_[k] = 1;
      candidates_.push_back(k);
    }
  };
  for (uint32_t k : moving) {
    consider(k);
    if (parent[k] < 0) continue;
    const auto p = static_cast<uint32_t>(parent[k]);
    child_current_[p] += delta[k].current;  // moving: valid, as the dense sum requires
    child_swap_[p] += delta[k].swap;
    consider(p);
  }
  for (uint32_t j : candidates_) {
    const ProbeDelta& d = delta[j];
    const uint64_t local = d.valid ? abs_diff(d.current, child_current_[j]) + abs_diff(d.swap, child_swap_[j]) : 0;
    if (local != 0)
      for (int k = static_cast<int>(j); k >= 0; k = parent[static_cast<size_t>(k)]) {
        const auto u = static_cast<uint32_t>(k);
        if (change_[u] == 0) touched_.push_back(u);
        change_[u] += local;
      }
  }
  for (uint32_t j : candidates_) {
    seen_[j] = 0;
    child_current_[j] = 0;
    child_swap_[j] = 0;
  }
  return change_;
}

}  // namespace memcg::cache
