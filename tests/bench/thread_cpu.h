// The calling thread's CPU time, for the measuring tools (memcg-bench,
// memcg-cost, memcg-cadvisor-style, memcg-premise): CLOCK_THREAD_CPUTIME_ID,
// a system call, so taken around batches rather than single reads.
#pragma once

#include <ctime>

namespace memcg::bench {

inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace memcg::bench
