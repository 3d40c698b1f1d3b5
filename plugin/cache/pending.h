// Propagating probed change up the tree.
//
// The kernel counts every stat update against the memcg and all its ancestors
// (memcg_rstat_updated), so a parent flushes when its subtree changed enough.
// We probe memory.current (and swap.current) of every cgroup, but a parent's
// own value already contains its children's: adding the child's change to the
// parent *and* the parent's own delta would count it twice, while using only
// the parent's net delta would miss children that moved in opposite directions
// (A +10 MiB, B -10 MiB: the parent's memory.stat changed, its current did not).
//
// So each cgroup contributes its *local* change, |Δ own − Σ Δ children| per
// counter (for a leaf: |Δ own|; for an inner node: what its tracked children do
// not explain — processes in the root, excluded or new children), and its
// pending change grows by the sum of local changes over its subtree.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace memcg::cache {

struct ProbeDelta {
  bool valid = false;  // false: no previous probe (new cgroup) or no such file (root)
  int64_t current = 0;
  int64_t swap = 0;
};

// `parent[i]` is the index of i's nearest tracked ancestor (< i), or -1; the
// entries are in pre-order (every parent before its descendants).
// Writes each cgroup's subtree change (bytes) into `change`.
void subtree_change(std::span<const int> parent, std::span<const ProbeDelta> delta,
                    std::span<uint64_t> change, std::span<int64_t> scratch_current,
                    std::span<int64_t> scratch_swap) noexcept;

// The same result, visiting only what can be non-zero: a cgroup's local
// change is 0 unless it or one of its children moved, so only the cgroups
// that moved and their parents are computed, and each local change is added
// up the chain of ancestors. Most passes most cgroups did not move (a quiet
// probe's delta is 0): the pass then costs a few entries, not three stores
// and a loop step for every cgroup. Keeps its arrays between calls and
// clears only what the previous call wrote.
class SparseSubtreeChange {
 public:
  // `moving`: the indexes whose delta is valid and not zero, ascending.
  // The result is valid until the next call.
  std::span<const uint64_t> compute(std::span<const int> parent, std::span<const ProbeDelta> delta,
                                    std::span<const uint32_t> moving);

 private:
  void reset(size_t n);
  std::vector<uint64_t> change_;
  std::vector<int64_t> child_current_, child_swap_;
  std::vector<unsigned char> seen_;
  std::vector<uint32_t> touched_;     // change_ entries written by the last call
  std::vector<uint32_t> candidates_;  // the moving cgroups and their parents
};

}  // namespace memcg::cache
