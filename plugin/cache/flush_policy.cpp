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

std::optional<ReadReason> decide_flush(const FlushInput& in, TimePoint now) noexcept {
  if (!in.last_read) return ReadReason::initial;
  if (in.pending >= in.threshold) return ReadReason::threshold;
  if (in.events_moved) return ReadReason::event;
  if (now - *in.last_read + in.lookahead >= in.max_age) return ReadReason::max_age;
  if (in.forced) return ReadReason::forced;
  return std::nullopt;
}

}  // namespace memcg::cache
