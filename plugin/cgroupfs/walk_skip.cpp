#include "plugin/cgroupfs/walk_skip.h"

namespace memcg::cgroupfs {

bool may_skip_walk(const SkipEvidence& e) noexcept {
  // Directories without the memory controller, beyond max_depth, excluded by
  // the globs or over max_cgroups are descendants that are not collected:
  // the count then exceeds the collected ones and every rescan walks. That
  // is the safe side: such a directory can gain the controller or be
  // replaced without the count moving.
  return e.settled && e.last_walk_complete && e.descendants && *e.descendants == e.collected_descendants &&
         e.skipped_in_a_row < kMaxWalksSkippedInARow;
}

}  // namespace memcg::cgroupfs
