#include "plugin/snapshot.h"

namespace memcg {

std::string_view file_name(FileKind f) noexcept {
  static constexpr std::string_view kNames[kFileKindCount] = {
      "memory.stat", "memory.current", "memory.swap.current", "memory.events", "memory.pressure",
      "memory.peak", "memory.min", "memory.low", "memory.high", "memory.max", "memory.swap.max"};
  return kNames[static_cast<size_t>(f)];
}

std::string_view limit_name(LimitKind k) noexcept {
  static constexpr std::string_view kNames[lim_count] = {"min", "low", "high", "max", "swap_max"};
  return kNames[k];
}

}  // namespace memcg
