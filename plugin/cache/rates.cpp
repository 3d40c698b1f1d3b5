#include "plugin/cache/rates.h"

namespace memcg::cache {

double counter_rate(uint64_t prev, uint64_t cur, Duration dt) noexcept {
  const uint64_t increase = cur >= prev ? cur - prev : cur;
  return static_cast<double>(increase) / to_seconds(dt);
}

double gauge_rate(uint64_t prev, uint64_t cur, Duration dt) noexcept {
  const double diff = cur >= prev ? static_cast<double>(cur - prev) : -static_cast<double>(prev - cur);
  return diff / to_seconds(dt);
}

}  // namespace memcg::cache
