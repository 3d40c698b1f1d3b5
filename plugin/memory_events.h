// A cgroup's event counters as last read: memory.events (the cgroup and its
// descendants), memory.events.local (the cgroup's own), memory.swap.events,
// and the kills systemd-oomd recorded on the cgroup. Immutable and shared:
// the collector builds a new one only when a counter changed, so a quiet
// cgroup's snapshot view copies a pointer, and a removed cgroup's tombstone
// keeps the very values read when the kernel last raised an event.
#pragma once

#include <cstdint>
#include <optional>

#include "plugin/clock.h"
#include "base/parse/event_keys.h"

namespace memcg {

// What systemd-oomd wrote in the cgroup's extended attributes when it acted
// on it (src/oom/oomd-util.c): user.oomd_ooms, the times it chose the cgroup,
// and user.oomd_kill, the processes it killed there. Absent where oomd never
// acted or the attributes cannot be read (see docs/oom.md).
struct OomdCounts {
  std::optional<uint64_t> ooms, kills;
  bool operator==(const OomdCounts&) const = default;
};

struct MemoryEvents {
  parse::EventValues events;                   // memory.events
  std::optional<parse::EventValues> local;     // memory.events.local, where the kernel has it
  std::optional<parse::SwapEventValues> swap;  // memory.swap.events, where swap is accounted
  OomdCounts oomd;
  TimePoint read_at{};  // the last read that found a change
};

}  // namespace memcg
