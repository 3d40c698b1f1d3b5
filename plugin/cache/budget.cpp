#include "plugin/cache/budget.h"

#include <algorithm>

namespace memcg::cache {
namespace {

int rank(ReadReason r) noexcept {
  switch (r) {
    case ReadReason::max_age: return 0;
    case ReadReason::initial: return 1;
    case ReadReason::event: return 2;
    case ReadReason::threshold: return 3;
    case ReadReason::forced: return 4;
  }
  return 5;
}

}  // namespace

std::vector<ReadCandidate> choose_reads(std::span<const ReadCandidate> wanted, uint64_t budget) {
  std::vector<ReadCandidate> out(wanted.begin(), wanted.end());
  auto before = [](const ReadCandidate& a, const ReadCandidate& b) {
    if (rank(a.reason) != rank(b.reason)) return rank(a.reason) < rank(b.reason);
    if (a.reason == ReadReason::threshold && a.urgency != b.urgency) return a.urgency > b.urgency;
    if (a.age != b.age) return a.age > b.age;
    return a.index < b.index;  // deterministic
  };
  if (out.size() > budget) {
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(budget), out.end(), before);
    out.resize(budget);
  } else {
    std::sort(out.begin(), out.end(), before);
  }
  return out;
}

}  // namespace memcg::cache
