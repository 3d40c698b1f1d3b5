#include "plugin/cache/flush_policy.h"

namespace memcg::cache {

std::string_view to_string(ReadReason r) noexcept {
  switch (r) {
    case ReadReason::initial: return "initial";
    case ReadReason::threshold: return "threshold";
    case ReadReason::event: return "event";
    case ReadReason::max_age: return "max_age";
    case ReadReason::forced: return "forced";
  }
  return "initial";
}

Duration refresh_phase(uint64_t inode, Duration span) noexcept {
  if (span.count() <= 0) return Duration{0};
  // splitmix64: inode numbers are sequential; their hash is not.
  uint64_t z = inode + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return Duration{static_cast<Duration::rep>(z % static_cast<uint64_t>(span.count()))};
}

}  // namespace memcg::cache
