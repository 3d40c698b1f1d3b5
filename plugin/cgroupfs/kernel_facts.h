// What the running kernel means for the values memcg-exporter serves, found
// once at start: how far its own memory.stat may lag (the flush threshold,
// 64 x online CPUs updates, and the periodic flush), and which newer-kernel
// features the cgroup tree shows. docs/how-the-cache-decides.md has the
// kernel code behind each number.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memcg::cgroupfs {

struct KernelVersion {
  int major = 0, minor = 0;
  friend auto operator<=>(const KernelVersion&, const KernelVersion&) = default;
};

// "6.12.117+deb13-cloud-amd64" -> {6, 12}; nullopt when it does not start with N.N.
std::optional<KernelVersion> parse_kernel_release(std::string_view release) noexcept;

// What the host says about itself (uname, sysconf): injected, so that tests
// can be any kernel.
struct HostFacts {
  std::string release;       // uname -r
  unsigned online_cpus = 1;  // the kernel's num_online_cpus()
  uint64_t page_size = 4096;
  static HostFacts current();
};

struct KernelFeature {
  std::string_view name;  // the label value: kKernelFeatureNames
  bool present = false;
  std::string_view note;  // what memcg-exporter does with it, for the status page
};

// MEMCG_CHARGE_BATCH (include/linux/memcontrol.h): updates a CPU batches
// before they count against the flush threshold; the threshold is this
// times the online CPUs (mm/memcontrol.c, 5.15 onwards).
inline constexpr uint64_t kChargeBatch = 64;
// FLUSH_TIME: the periodic flush of every cgroup's statistics (5.15 onwards).
inline constexpr std::chrono::seconds kPeriodicFlush{2};

struct KernelFacts {
  std::string release;
  std::optional<KernelVersion> version;
  unsigned online_cpus = 1;
  uint64_t page_size = 4096;
  std::vector<KernelFeature> features;

  // Updates pending before a memory.stat read flushes (host-wide before 6.8,
  // per cgroup subtree since) ...
  uint64_t flush_threshold_updates() const noexcept { return kChargeBatch * online_cpus; }
  // ... in bytes, where the kernel counts pages (6.8 onwards counts every
  // memory.stat amount in pages; 6.1 counts slab in bytes, which only makes
  // it flush sooner).
  uint64_t flush_threshold_bytes() const noexcept { return flush_threshold_updates() * page_size; }
  // How far a memory.stat amount may lag its cgroup's true value when it is
  // read: up to the threshold counted and not yet flushed, plus up to one
  // batch per CPU not yet counted.
  uint64_t stat_lag_bytes() const noexcept { return 2 * flush_threshold_bytes(); }
  bool has(std::string_view feature) const noexcept;
};

// Looks at the cgroup tree at `root` on a kernel that describes itself as
// `host`: the root's memory.stat keys and a child cgroup's memory.peak.
// Never fails: what cannot be read counts as absent.
KernelFacts probe_kernel(const std::string& root, const HostFacts& host);

}  // namespace memcg::cgroupfs
