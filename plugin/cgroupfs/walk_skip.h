// Whether a rescan can skip walking the tree. A walk costs a path lookup per
// directory even when nothing changed (the usual case: most rescans of a
// settled host find exactly what the last one found); the root's cgroup.stat
// counts its live descendants for the price of one read.
//
// The argument: if every live descendant was collected at the last walk and
// none of them has gone since (a removed cgroup's kept fds answer ENODEV,
// and every collected cgroup is probed every pass), then a count equal to
// the number collected leaves no room for a new one. The count must be read
// before the pass's probe proves the collected ones still live: a removal
// and a creation between two rescans keep the count but the probe then sees
// the removal, and the caller walks at the next pass (walk_owed).
//
// Directories without the memory controller (systemd puts udev's workers in
// one) are descendants that are not collected. They are vouched for one by
// one: their own cgroup.stat, kept open, answers ENODEV once they are
// removed and counts their subtrees (which the walk does not enter), and
// their cgroup.controllers says when the memory controller arrives. Then
// the root's count must equal the collected cgroups plus those.
//
// What the count cannot see is a rename (cgroupfs allows it within a parent;
// systemd and the container runtimes do not use it): at most
// kMaxWalksSkippedInARow rescans are skipped before one walks anyway.
#pragma once

#include <cstdint>
#include <optional>

namespace memcg::cgroupfs {

struct SkipEvidence {
  // The table holds exactly what the last walk found, under the same rules,
  // none left out for want of descriptors and none found gone since.
  bool settled = false;
  // The last walk saw the whole tree: the root opened, no subtree unknown.
  bool last_walk_complete = false;
  // nr_descendants of the root's cgroup.stat, read now (nullopt: unreadable).
  std::optional<uint64_t> descendants;
  // Collected cgroups other than the root itself.
  uint64_t collected_descendants = 0;
  // The directories without the controller, each with its subtree; nullopt
  // when one of them could not be vouched for (gone, unreadable, or the
  // controller arrived).
  std::optional<uint64_t> uncollected_descendants = 0;
  uint64_t skipped_in_a_row = 0;  // rescans skipped since the last walk
};

inline constexpr uint64_t kMaxWalksSkippedInARow = 5;

bool may_skip_walk(const SkipEvidence& e) noexcept;

}  // namespace memcg::cgroupfs
