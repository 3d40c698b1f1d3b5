// The kills of a removed cgroup that no read of its own saw, recovered from
// its parent's count.
//
// The kernel counts an OOM kill in the cgroup's memory.events and in every
// ancestor's, then notifies pollers at most once every 10 ms per file, and a
// notification held back is dropped with the cgroup. A runtime that removes
// the cgroup within milliseconds of its last task's exit can win the race
// against the exporter's wake-up (docs/oom.md#removed-before-read): the
// cgroup's own file is gone, and its kill lives on only in its parent's
// hierarchical count. For a parent P the exporter keeps
//     unexplained = P's memory.events - P's memory.events.local
//                 - its live children's memory.events
//                 - the last counts of its children removed since
// which stays constant while every child's counts are read. It is taken as
// P's base at a settled pass; when a child is removed unread, what the
// unexplained count gained since the base belongs to the removed children,
// and is given to the removed child when it is the only candidate. Pure
// functions: the collector does the reads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/parse/event_keys.h"

namespace memcg {

// The counters recovered: the OOM killer's (oom, oom_kill, oom_group_kill).
inline constexpr std::array<parse::EventKey, 3> kRecoveredEvents = {parse::ev_oom, parse::ev_oom_kill,
                                                                     parse::ev_oom_group_kill};
using KillCounts = std::array<int64_t, kRecoveredEvents.size()>;

// The recovered counters of one memory.events (absent ones 0).
KillCounts kill_counts(const parse::EventValues& v) noexcept;
KillCounts& operator+=(KillCounts& a, const KillCounts& b) noexcept;
KillCounts operator-(KillCounts a, const KillCounts& b) noexcept;

// Kept per parent cgroup.
struct KillLedger {
  std::optional<KillCounts> base;  // the unexplained count at the last settled pass
  KillCounts retired{};            // the last counts of the children removed so far
};

// Whether any counter of `now` is above `base`.
bool any_gain(const KillCounts& now, const KillCounts& base) noexcept;

// What the parent's counts do not explain: hierarchical minus own minus the
// children's, live (`children`) and removed (`ledger.retired`).
KillCounts unexplained(const parse::EventValues& hier, const parse::EventValues& local, const KillCounts& children,
                       const KillLedger& ledger) noexcept;

// The removal of children of one parent, in one pass.
struct RemovalFacts {
  size_t unread = 0;               // removed children whose counts were not read after their last task's exit
  bool all_children_known = false;  // the parent's live descendants are all collected (none left out or excluded)
};

// Where the unexplained count's gain since the base goes: to the one unread
// child (`given`), or, with no base, several candidates or a descendant the
// exporter does not collect, to none (`unattributed`; the parent's own
// count still has them). Never negative: a child first read with kills it
// had before (or one admitted late) lowers the count, and gives nothing.
struct Recovery {
  KillCounts given{};
  KillCounts unattributed{};
};
Recovery recover(const KillLedger& ledger, const KillCounts& now_unexplained, const RemovalFacts& facts) noexcept;

}  // namespace memcg
