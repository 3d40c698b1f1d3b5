// Per-second rates from two samples and their monotonic timestamps.
#pragma once

#include <cstdint>

#include "plugin/clock.h"

namespace memcg::cache {

// A monotonically increasing counter. A decrease is a reset (the counter
// started over), treated as Prometheus does: the increase is the new value.
// Never negative. dt must be positive.
double counter_rate(uint64_t prev, uint64_t cur, Duration dt) noexcept;

// A gauge's derivative (bytes/s); negative when it shrinks.
double gauge_rate(uint64_t prev, uint64_t cur, Duration dt) noexcept;

}  // namespace memcg::cache
