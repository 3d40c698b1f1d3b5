#include "plugin/clock.h"

#include <time.h>

namespace memcg {
namespace {

class SystemClock final : public Clock {
 public:
  TimePoint now() noexcept override { return std::chrono::steady_clock::now(); }
  Duration thread_cpu() noexcept override {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  }
  WallTime wall() noexcept override { return std::chrono::system_clock::now(); }
};

}  // namespace

Clock& Clock::system() noexcept {
  static SystemClock clock;
  return clock;
}

}  // namespace memcg
