// The keys of the memory controller's event files, in the kernel's print
// order (Documentation/admin-guide/cgroup-v2.rst, memory_events_show and
// swap_events_show in mm/memcontrol.c). Every value is a counter since the
// cgroup was created; a key a newer kernel adds lands in the parse's
// `unknown` list and is exported as a counter by its own name.
#pragma once

#include "base/parse/flat_keyed.h"
#include "base/parse/key_table.h"

namespace memcg::parse {

// memory.events (the cgroup and its descendants) and memory.events.local
// (the cgroup's own): the same keys. sock_throttled is printed by kernels
// since 6.15 only (a socket's memory charge was throttled).
enum EventKey : unsigned char { ev_low, ev_high, ev_max, ev_oom, ev_oom_kill, ev_oom_group_kill, ev_sock_throttled, ev_count };
const KeyTable& event_key_table() noexcept;
using EventValues = FlatKeyed<ev_count>;

// memory.swap.events: swap.high crossed, swap.max hit, a swap allocation
// failed (swap full, or swap.max).
enum SwapEventKey : unsigned char { sev_high, sev_max, sev_fail, sev_count };
const KeyTable& swap_event_key_table() noexcept;
using SwapEventValues = FlatKeyed<sev_count>;

}  // namespace memcg::parse
