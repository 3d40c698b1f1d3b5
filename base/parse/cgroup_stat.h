// The cgroup core files a rescan can trust instead of walking, and the one
// that says a cgroup's last task exited. cgroup.stat:
// "nr_descendants N" and "nr_dying_descendants N" (newer kernels add
// nr_subsys_* lines); only the live descendant count is wanted: the kernel
// keeps it as a counter, so reading it costs the same whatever the tree's
// size, unlike a walk. cgroup.controllers: the controllers available here,
// space-separated.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace memcg::parse {

// nr_descendants, or nullopt if the line is missing, repeated or malformed.
std::optional<uint64_t> parse_nr_descendants(std::string_view text) noexcept;

// cgroup.events: "populated 1" while the cgroup or a descendant has a task,
// "populated 0" once the last one exited; nullopt if the line is missing,
// repeated or malformed.
std::optional<bool> parse_populated(std::string_view text) noexcept;

// Whether cgroup.controllers lists `name`.
bool lists_controller(std::string_view text, std::string_view name) noexcept;

}  // namespace memcg::parse
