#include "plugin/cache/companion_reads.h"

namespace memcg::cache {
namespace {

bool due(const std::optional<TimePoint>& at, Duration max_age, TimePoint now) noexcept {
  return !at || now - *at >= max_age;
}

}  // namespace

CompanionReads decide_companions(const CompanionInput& in, TimePoint now) noexcept {
  const bool everything =
      in.reason == ReadReason::initial || in.reason == ReadReason::event || in.reason == ReadReason::forced;
  CompanionReads out;
  // max_age 0 asks for them with every read, watched or not.
  const bool trust_watch = in.limits_watched && !in.limits_changed && in.max_age > Duration::zero();
  out.limits = everything || (due(in.limits_at, in.max_age, now) && !trust_watch);
  out.oomd = everything || due(in.oomd_at, in.max_age, now);
  out.peak = everything || in.moved_since_peak || due(in.peak_at, in.max_age, now);
  out.pressure = !in.pressure_probed && (everything || due(in.pressure_at, in.max_age, now));
  return out;
}

}  // namespace memcg::cache
