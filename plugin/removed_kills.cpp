#include "plugin/removed_kills.h"

#include <algorithm>

namespace memcg {

KillCounts kill_counts(const parse::EventValues& v) noexcept {
  KillCounts out{};
  for (size_t k = 0; k < kRecoveredEvents.size(); ++k)
    out[k] = static_cast<int64_t>(v.get(kRecoveredEvents[k]).value_or(0));
  return out;
}

KillCounts& operator+=(KillCounts& a, const KillCounts& b) noexcept {
  for (size_t k = 0; k < a.size(); ++k) a[k] += b[k];
  return a;
}

KillCounts operator-(KillCounts a, const KillCounts& b) noexcept {
  for (size_t k = 0; k < a.size(); ++k) a[k] -= b[k];
  return a;
}

bool any_gain(const KillCounts& now, const KillCounts& base) noexcept {
  for (size_t k = 0; k < now.size(); ++k)
    if (now[k] > base[k]) return true;
  return false;
}

KillCounts unexplained(const parse::EventValues& hier, const parse::EventValues& local, const KillCounts& children,
                       const KillLedger& ledger) noexcept {
  return kill_counts(hier) - kill_counts(local) - children - ledger.retired;
}

Recovery recover(const KillLedger& ledger, const KillCounts& now_unexplained, const RemovalFacts& facts) noexcept {
  Recovery out;
  if (facts.unread == 0 || !ledger.base) return out;
  const KillCounts gain = now_unexplained - *ledger.base;
  const bool attributable = facts.unread == 1 && facts.all_children_known;
  for (size_t k = 0; k < gain.size(); ++k) {
    const int64_t g = std::max<int64_t>(gain[k], 0);
    (attributable ? out.given : out.unattributed)[k] = g;
  }
  return out;
}

}  // namespace memcg
