#include "plugin/cgroupfs/walk_skip.h"

namespace memcg::cgroupfs {

bool may_skip_walk(const SkipEvidence& e) noexcept {
  // Directories beyond max_depth, excluded by the globs or over max_cgroups
  // are descendants neither collected nor vouched for: the count then
  // exceeds the two and every rescan walks. That is the safe side.
  return e.settled && e.last_walk_complete && e.descendants && e.uncollected_descendants &&
         *e.descendants == e.collected_descendants + *e.uncollected_descendants &&
         e.skipped_in_a_row < kMaxWalksSkippedInARow;
}

}  // namespace memcg::cgroupfs
