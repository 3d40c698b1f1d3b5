// What the connection gate did, for the memcg_exporter_http_* metrics:
// written by the gate's thread, read by scrapes.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>

namespace memcg::exporter {

struct GateStats {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused_per_client{0}, refused_total{0};
  std::atomic<uint64_t> refused_hello{0};  // TLS: not a ClientHello, or one over 16 KiB
  std::atomic<uint64_t> head_timeouts{0};  // closed before their request head was complete
  std::atomic<uint64_t> evicted{0};        // closed to make room for another client's (all were taken)
  std::atomic<uint64_t> waiting{0};        // open, no request of theirs at a worker
  std::atomic<uint64_t> relayed{0};        // open, a request of theirs at a worker now
  std::atomic<uint64_t> bytes_received{0}, bytes_sent{0};  // with clients (TLS: the plain text)
  std::atomic<uint64_t> buffered_bytes{0};  // held for responses on their way now (response_budget.h)
  // The gate thread's CPU time, read from its clock when asked (sampling it
  // in the gate's loop would cost a system call per wake-up); never goes back.
  uint64_t cpu_ns() const noexcept {
    timespec ts{};
    if (cpu_clock_set.load(std::memory_order_acquire) && ::clock_gettime(cpu_clock.load(), &ts) == 0) {
      const uint64_t ns = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
      uint64_t seen = cpu_seen.load();
      while (ns > seen && !cpu_seen.compare_exchange_weak(seen, ns)) {}
    }
    return cpu_seen.load();
  }
  std::atomic<clockid_t> cpu_clock{};
  std::atomic<bool> cpu_clock_set{false};  // set while the gate's thread runs
  mutable std::atomic<uint64_t> cpu_seen{0};
};

// CPU time spent answering /metrics (rendering, compressing, sending), in
// nanoseconds, summed over the threads that served it.
struct ScrapeCpu {
  std::atomic<uint64_t> ns{0};
};

}  // namespace memcg::exporter
