// The calling thread's scheduler slice request (sched_setattr(2) with
// sched_attr.sched_runtime for SCHED_OTHER). EEVDF, from Linux 6.12, takes
// it as the run time the thread asks for before a tick may preempt it
// (clamped to 0.1..100 ms); the kernel's own advice is a periodic task's
// run time at a high confidence (95 %+). Earlier kernels accept the call and
// ignore the value, and report no slice back.
#pragma once

#include <chrono>

#include "base/sys/result.h"

namespace memcg::sys {

// Asks for `slice` for the calling thread, its policy and nice value kept;
// a zero `slice` returns it to the kernel's default. The slice the kernel
// reports afterwards: the request as clamped where it keeps one (6.12+), 0
// where it keeps none. The errno of sched_getattr or sched_setattr on
// failure (EPERM under a seccomp filter that denies them, ENOSYS).
Result<std::chrono::nanoseconds> request_thread_slice(std::chrono::nanoseconds slice) noexcept;

}  // namespace memcg::sys
