// What the connection gate did, for the memcg_exporter_http_* metrics:
// written by the gate's thread, read by scrapes.
#pragma once

#include <atomic>
#include <cstdint>

namespace memcg::exporter {

struct GateStats {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused_per_client{0}, refused_total{0};
  std::atomic<uint64_t> head_timeouts{0};  // closed before their request head was complete
  std::atomic<uint64_t> waiting{0};        // open, head not yet complete or waiting for a worker
  std::atomic<uint64_t> relayed{0};        // open and handed to a worker
};

// CPU time spent answering /metrics (rendering, compressing, sending), in
// nanoseconds, summed over the threads that served it.
struct ScrapeCpu {
  std::atomic<uint64_t> ns{0};
};

}  // namespace memcg::exporter
