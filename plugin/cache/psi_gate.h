// Whether a cgroup's memory.pressure totals can have moved since they were
// read, told by the collection root's memory.pressure read once a pass.
//
// The kernel charges a task's memory stall to the task's cgroup and to every
// ancestor of it (psi_group_change() walks up the hierarchy, skipping only
// cgroups whose cgroup.pressure is 0, never the root), and a group's "some"
// state holds whenever any task below it is stalled. So while the root's
// "some" total stays the same, no task below it stalled, and every "some"
// and "full" total below is what it was: a cgroup whose totals were read
// when the root's total was the one seen now still has them. The kernel
// prints the totals in microseconds cut from nanoseconds, so a read now
// could say at most 1 µs more. On a host where something somewhere stalls
// all the time, the gate stays open and costs one read a pass.
// Pure: the caller reads the root and keeps each cgroup's mark.
#pragma once

#include <cstdint>
#include <optional>

namespace memcg::cache {

class PsiGate {
 public:
  // This pass's "some" total of the root, in microseconds (nullopt: no
  // reading this pass, and every cgroup is read as without the gate).
  void set(std::optional<uint64_t> root_some_total_us) noexcept { root_ = root_some_total_us; }
  // What to keep with a cgroup's totals read in this pass.
  std::optional<uint64_t> mark() const noexcept { return root_; }
  // Whether totals read under `mark` are still the kernel's.
  bool unchanged_since(std::optional<uint64_t> mark) const noexcept { return root_ && mark && *root_ == *mark; }

 private:
  std::optional<uint64_t> root_;
};

}  // namespace memcg::cache
