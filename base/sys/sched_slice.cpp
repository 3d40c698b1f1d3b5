#include "base/sys/sched_slice.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace memcg::sys {

namespace {

// The kernel's struct sched_attr (SCHED_ATTR_SIZE_VER1): its uapi header
// cannot be included beside glibc's <sched.h> (both define sched_param).
struct sched_attr {
  uint32_t size, sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};
static_assert(sizeof(sched_attr) == 56);
constexpr uint64_t kResetOnFork = 0x01;  // SCHED_FLAG_RESET_ON_FORK

// glibc 2.36 wraps neither call.
int get_attr(sched_attr& attr) noexcept {
  return static_cast<int>(::syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0));
}

}  // namespace

Result<std::chrono::nanoseconds> request_thread_slice(std::chrono::nanoseconds slice) noexcept {
  sched_attr attr{};
  if (get_attr(attr) != 0) return Result<std::chrono::nanoseconds>::failure(errno);
  // Everything as it is (policy, nice, reset-on-fork) but the slice.
  attr.size = sizeof attr;
  attr.sched_flags &= kResetOnFork;
  attr.sched_runtime = static_cast<uint64_t>(slice.count() > 0 ? slice.count() : 0);
  if (::syscall(SYS_sched_setattr, 0, &attr, 0) != 0) return Result<std::chrono::nanoseconds>::failure(errno);
  sched_attr now{};
  if (get_attr(now) != 0) return Result<std::chrono::nanoseconds>::failure(errno);
  return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(now.sched_runtime));
}

}  // namespace memcg::sys
