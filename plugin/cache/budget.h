// The host-wide read budget (collector.max_stat_reads_per_second): when more
// cgroups want a memory.stat read in a pass than the budget allows, choose
// which. Pure: candidates in, chosen indexes out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "plugin/cache/flush_policy.h"
#include "plugin/clock.h"

namespace memcg::cache {

struct ReadCandidate {
  uint32_t index;       // the caller's cgroup index
  ReadReason reason;
  double urgency;       // pending / threshold (threshold reads)
  Duration age;         // since the last read (0 if never read)
};

// Priority, highest first:
//   1. max_age reads, oldest first: deferring one breaks a promised bound;
//   2. initial reads: a cgroup with no data at all;
//   3. event reads (an OOM or limit hit);
//   4. threshold reads, highest pending/threshold ratio first;
//   5. forced reads.
// Returns the chosen candidates (at most `budget`), in priority order.
std::vector<ReadCandidate> choose_reads(std::span<const ReadCandidate> wanted, uint64_t budget);

// Spreads a per-second budget over passes: whole reads this pass, the
// fraction carried over so e.g. 2.5 reads/s at one pass/s alternates 2 and 3.
class BudgetMeter {
 public:
  uint64_t take(double per_second, Duration interval) noexcept {
    credit_ += per_second * to_seconds(interval);
    // The epsilon keeps ten passes of 0.1 from summing to 0.999... and
    // losing a read to rounding.
    const auto whole = static_cast<uint64_t>(credit_ + 1e-9);
    credit_ = std::max(0.0, credit_ - static_cast<double>(whole));
    return whole;
  }

 private:
  double credit_ = 0;
};

}  // namespace memcg::cache
