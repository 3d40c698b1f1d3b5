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

#include "config/config.h"

namespace memcg::cgroupfs {

struct KernelVersion {
  int major = 0, minor = 0;
  friend auto operator<=>(const KernelVersion&, const KernelVersion&) = default;
};

// "6.12.117+deb13-cloud-amd64" -> {6, 12}; nullopt when it does not start with N.N.
std::optional<KernelVersion> parse_kernel_release(std::string_view release) noexcept;

// uname -r; "" if it cannot be had.
std::string kernel_release();

struct KernelFeature {
  std::string_view name;  // the label value: kKernelFeatureNames
  bool present = false;
  std::string_view note;  // what memcg-exporter does with it, for the status page
};

// FLUSH_TIME: the periodic flush of every cgroup's statistics (5.15 onwards).
inline constexpr std::chrono::seconds kPeriodicFlush{2};

// What the collection root is on: only cgroup2fs takes writes as the kernel
// means them (a reset of memory.peak); on any other file system (a fixture
// or demo tree in a temporary directory) a write would replace the file's
// content, so memcg-exporter writes nothing there.
enum class RootFs { cgroup2fs, other };

// statfs(2) of `root`: cgroup2fs by its magic number, else other (an
// unreadable root too: no write is the safe side).
RootFs root_fs(const std::string& root) noexcept;

struct KernelFacts {
  std::string release;
  RootFs root_fs = RootFs::other;
  std::optional<KernelVersion> version;
  config::HostFacts host;  // page size and online CPUs (the kernel's num_online_cpus())
  std::vector<KernelFeature> features;

  // The flush threshold in bytes, where the kernel counts pages (6.8 onwards
  // counts every memory.stat amount in pages; 6.1 counts slab in bytes,
  // which only makes it flush sooner): config::kernel_flush_slack, the
  // number threshold = "auto" is too.
  uint64_t flush_threshold_bytes() const noexcept { return config::kernel_flush_slack(host); }
  // ... in updates pending before a memory.stat read flushes (host-wide
  // before 6.8, per cgroup subtree since): MEMCG_CHARGE_BATCH x online CPUs.
  uint64_t flush_threshold_updates() const noexcept { return flush_threshold_bytes() / host.page_size; }
  // How far a memory.stat amount may lag its cgroup's true value when it is
  // read: up to the threshold counted and not yet flushed, plus up to one
  // batch per CPU not yet counted.
  uint64_t stat_lag_bytes() const noexcept { return 2 * flush_threshold_bytes(); }
  bool has(std::string_view feature) const noexcept;
};

// Looks at the cgroup tree at `root` on kernel `release` (uname -r) of a
// `host`: the root's memory.stat keys and a child cgroup's memory.peak,
// whose reset is a feature only where the root is cgroup2fs (`fs`, from
// root_fs()). Injected, so that tests can be any kernel. Never fails: what
// cannot be read counts as absent.
KernelFacts probe_kernel(const std::string& root, std::string_view release, const config::HostFacts& host, RootFs fs);

}  // namespace memcg::cgroupfs
