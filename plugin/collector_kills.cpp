// The collector's side of removed_kills.h: each parent's base at a settled
// pass, and at a removal the reads that recover a removed cgroup's kills
// from its parent's count.
#include <algorithm>
#include <string>
#include <string_view>
#include <optional>
#include <utility>
#include <vector>

#include "base/parse/cgroup_stat.h"
#include "plugin/cgroupfs/kept_file.h"
#include "plugin/collector.h"

namespace memcg {

namespace {

// How long a parent's and its children's kill counts must have stood still
// for its base to be taken: the kernel holds a notification back at most
// 10 ms, and the wake-up that reads it follows within milliseconds, so a
// kill in flight has reached both counts well within this. Their other
// events (max, high) may move all the while: a parent held at its limit
// still settles.
constexpr Duration kSettled = std::chrono::seconds(1);

std::string_view parent_path(std::string_view path) noexcept {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view{} : path.substr(0, slash);
}

}  // namespace

void Collector::settle_kill_ledgers(TimePoint now) {
  auto& entries = table_.entries();
  const auto& parents = table_.parents();
  const size_t n = entries.size();
  ledger_children_.assign(n, KillCounts{});
  ledger_newest_.assign(n, TimePoint{});
  ledger_unknown_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int p = parents[i];
    if (p < 0) continue;
    const MemoryEvents* ev = entries[i].probe.events.get();
    if (!ev) {
      ledger_unknown_[static_cast<size_t>(p)] = 1;  // not read yet: its kills are in its parent's alone
      continue;
    }
    ledger_children_[static_cast<size_t>(p)] += kill_counts(ev->events);
    ledger_newest_[static_cast<size_t>(p)] = std::max(ledger_newest_[static_cast<size_t>(p)], entries[i].kills_at);
  }
  for (size_t i = 0; i < n; ++i) {
    CgroupEntry& e = entries[i];
    const MemoryEvents* ev = e.probe.events.get();
    if (!ev || !ev->local || ledger_unknown_[i]) continue;
    if (now - std::max(ledger_newest_[i], e.kills_at) < kSettled) continue;
    e.kills.base = unexplained(ev->events, *ev->local, ledger_children_[i], e.kills);
  }
}

void Collector::recover_removed_kills(std::vector<CgroupEntry>& departed, TimePoint now, PassReport& report) {
  const auto& entries = table_.entries();  // in path order (CgroupTable::rescan)
  std::vector<std::string_view> gone;
  gone.reserve(departed.size());
  for (const CgroupEntry& d : departed) gone.push_back(d.id->path);
  std::sort(gone.begin(), gone.end());
  const auto live = [&](std::string_view path) -> std::optional<size_t> {
    const auto it = std::lower_bound(entries.begin(), entries.end(), path, [](const CgroupEntry& e, std::string_view p) {
      return cgroupfs::path_before(e.id->path, p);
    });
    if (it == entries.end() || it->id->path != path) return std::nullopt;
    return static_cast<size_t>(it - entries.begin());
  };
  // Each removed cgroup under its nearest collected ancestor; one whose
  // nearest is removed too is in that one's counts, not its own.
  std::vector<std::pair<size_t, size_t>> under;  // (live parent, departed)
  for (size_t d = 0; d < departed.size(); ++d) {
    for (std::string_view p = parent_path(departed[d].id->path); !p.empty(); p = parent_path(p)) {
      if (std::binary_search(gone.begin(), gone.end(), p)) break;
      if (const auto at = live(p)) {
        under.emplace_back(*at, d);
        break;
      }
    }
  }
  std::sort(under.begin(), under.end());
  std::vector<CgroupEntry*> children;
  for (size_t a = 0; a < under.size();) {
    children.clear();
    size_t b = a;
    for (; b < under.size() && under[b].first == under[a].first; ++b) children.push_back(&departed[under[b].second]);
    settle_removal(under[a].first, children, now, report);
    a = b;
  }
}

// One past the parent's last descendant: the table is in path order
// (CgroupTable::rescan), so a subtree is the run of entries under its root.
size_t Collector::subtree_end(size_t parent) const {
  const auto& entries = table_.entries();
  const std::string_view at = entries[parent].id->path;
  size_t i = parent + 1;
  while (i < entries.size() && cgroupfs::path_under(at, entries[i].id->path)) ++i;
  return i;
}

// The children's counts read fresh, after the parent's: a kill the parent
// counts is then in a child's count too (the kernel counts the cgroup first,
// then its ancestors). False when one is gone: its counts may be missing as
// well, so no gain can be given to one cgroup.
bool Collector::read_children_fresh(size_t parent, TimePoint now, KillCounts& sum, PassReport& report) {
  auto& entries = table_.entries();
  sum = {};
  bool all = true;
  for (size_t i = parent + 1, end = subtree_end(parent); i < end; ++i) {
    if (table_.parents()[i] != static_cast<int>(parent)) continue;
    CgroupEntry& c = entries[i];
    const auto ev = reader_.read_events(c, {.events = true}, now, report);
    if (ev.gone) {
      c.gone = true;
      all = false;
      continue;
    }
    c.events_changed_owed = c.events_changed_owed || ev.changed;
    c.events_notable_owed = c.events_notable_owed || ev.notable;
    if (c.probe.events) sum += kill_counts(c.probe.events->events);
  }
  return all;
}

// Whether every live descendant of the parent is collected: the kernel's
// count of them (cgroup.stat) against the table's. One left out, excluded or
// without the memory controller may have had kills of its own.
bool Collector::all_descendants_collected(size_t parent) {
  auto& entries = table_.entries();
  const CgroupEntry& p = entries[parent];
  if (!p.dir.valid()) return false;
  const auto r = cgroupfs::read_once(io_, p.dir.get(), "cgroup.stat", kills_buf_);
  if (!r.ok()) return false;
  const auto count = parse::parse_nr_descendants(r.value());
  size_t collected = 0;
  for (size_t i = parent + 1, end = subtree_end(parent); i < end; ++i)
    if (!entries[i].gone) ++collected;
  return count && *count == collected;
}

KillCounts Collector::live_children(size_t parent) const {
  const auto& entries = table_.entries();
  KillCounts sum{};
  for (size_t i = parent + 1, end = subtree_end(parent); i < end; ++i)
    if (table_.parents()[i] == static_cast<int>(parent) && entries[i].probe.events)
      sum += kill_counts(entries[i].probe.events->events);
  return sum;
}

// `given` added to the removed cgroup's last counts (memory.events only:
// memory.events.local is its own, which the parent's count cannot tell).
void Collector::give(CgroupEntry& e, const KillCounts& given) {
  if (std::all_of(given.begin(), given.end(), [](int64_t g) { return g <= 0; })) return;
  auto next = std::make_shared<MemoryEvents>(*e.probe.events);
  for (size_t k = 0; k < given.size(); ++k) {
    const auto key = kRecoveredEvents[k];
    if (const auto v = next->events.get(key); v && given[k] > 0) next->events.values[key] = *v + static_cast<uint64_t>(given[k]);
  }
  e.probe.events = std::move(next);
}

void Collector::settle_removal(size_t parent, std::span<CgroupEntry* const> removed, TimePoint now,
                               PassReport& report) {
  CgroupEntry& p = table_.entries()[parent];
  KillCounts finals{};
  RemovalFacts facts;
  CgroupEntry* candidate = nullptr;
  for (CgroupEntry* c : removed) {
    if (c->probe.events) finals += kill_counts(c->probe.events->events);
    if (c->probe.events && c->events_after_exit) continue;
    ++facts.unread;
    candidate = c->probe.events ? c : nullptr;  // one never read has no counts to be given
  }
  if (facts.unread > 0 && p.kills.base && p.probe.events) {
    // The parent's counts now: a kill counted there stays whatever became of the child.
    const auto ev = reader_.read_events(p, {.events = true}, now, report);
    p.events_changed_owed = p.events_changed_owed || ev.changed;
    p.events_notable_owed = p.events_notable_owed || ev.notable;
    // Against the children's last counts first: only a gain is worth reading them all again.
    if (!ev.gone && p.probe.events->local &&
        any_gain(unexplained(p.probe.events->events, *p.probe.events->local, live_children(parent), p.kills) - finals,
                 *p.kills.base)) {
      KillCounts fresh{};
      // A removed child never read has no counts to take the gain.
      facts.all_children_known =
          read_children_fresh(parent, now, fresh, report) && candidate && all_descendants_collected(parent);
      const KillCounts now_unexplained =
          unexplained(p.probe.events->events, *p.probe.events->local, fresh, p.kills) - finals;
      const Recovery r = recover(p.kills, now_unexplained, facts);
      if (candidate) give(*candidate, r.given);
      for (size_t k = 0; k < r.given.size(); ++k) {
        counters_.kills_recovered += static_cast<uint64_t>(r.given[k]);
        counters_.kills_unattributed += static_cast<uint64_t>(r.unattributed[k]);
      }
      finals += r.given;
      // Read fresh, so settled: what stays unattributed is kept out of the next gain.
      p.kills.base = now_unexplained - r.given;
    }
  }
  p.kills.retired += finals;
}

}  // namespace memcg
