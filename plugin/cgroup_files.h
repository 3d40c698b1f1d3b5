// The cgroup files the collector reads, one row each. Adding a file is a row
// here, its parser (base/parse/), where its value lives (snapshot.h) and its
// metric row (exporter/exposition/metrics.cpp): discovery opens every `kept` file of the
// table, one helper (CgroupReader::read) reads any of them and files its
// errors under the kind, and the per-file error counters follow the table.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace memcg {

enum class FileKind : unsigned char {
  stat, current, swap_current, events, pressure, peak, min, low, high, max, swap_max, events_local, swap_events
};
inline constexpr size_t kFileKindCount = 13;

enum class FileAccess : unsigned char {
  kept,  // opened at discovery, re-read with one pread per use
  // Files read rarely: the limits with memory.stat at most every
  // limits_max_age, memory.events.local when memory.events changed,
  // memory.swap.events when the kernel flags it. Kept open like the others
  // while the fd budget has room for them after every cgroup's kept files
  // (five kernfs opens and closes per limits read were the largest part of a
  // re-read in the VM: docs/performance.md, memcg-cost); otherwise opened,
  // read and closed each time (and memory.swap.events, unpolled, read with
  // the limits).
  kept_if_room,
};

struct CgroupFile {
  FileKind kind;
  std::string_view name;
  FileAccess access;
};

// In FileKind order.
inline constexpr std::array<CgroupFile, kFileKindCount> kCgroupFiles = {{
    {FileKind::stat, "memory.stat", FileAccess::kept},
    {FileKind::current, "memory.current", FileAccess::kept},
    {FileKind::swap_current, "memory.swap.current", FileAccess::kept},
    {FileKind::events, "memory.events", FileAccess::kept},
    {FileKind::pressure, "memory.pressure", FileAccess::kept},
    {FileKind::peak, "memory.peak", FileAccess::kept},
    {FileKind::min, "memory.min", FileAccess::kept_if_room},
    {FileKind::low, "memory.low", FileAccess::kept_if_room},
    {FileKind::high, "memory.high", FileAccess::kept_if_room},
    {FileKind::max, "memory.max", FileAccess::kept_if_room},
    {FileKind::swap_max, "memory.swap.max", FileAccess::kept_if_room},
    {FileKind::events_local, "memory.events.local", FileAccess::kept_if_room},
    {FileKind::swap_events, "memory.swap.events", FileAccess::kept_if_room},
}};

// Row i describes FileKind i: the reader and the error counters index the table by kind.
static_assert([] {
  for (size_t i = 0; i < kCgroupFiles.size(); ++i)
    if (static_cast<size_t>(kCgroupFiles[i].kind) != i) return false;
  return true;
}());

// Descriptors a collected cgroup holds: at least its directory (the limit
// files are opened relative to it when not kept) and every kept file, at
// most the limit files too. The fd budget collects every cgroup it can with
// the least, then keeps limit files with what is left. A cgroup without some
// file (no swap accounting) holds fewer.
constexpr size_t kMinFdsPerCgroup = [] {
  size_t n = 1;
  for (const auto& f : kCgroupFiles) n += f.access == FileAccess::kept ? 1 : 0;
  return n;
}();
constexpr size_t kMaxFdsPerCgroup = 1 + kCgroupFiles.size();

constexpr const CgroupFile& cgroup_file(FileKind k) noexcept { return kCgroupFiles[static_cast<size_t>(k)]; }
constexpr std::string_view file_name(FileKind k) noexcept { return cgroup_file(k).name; }

}  // namespace memcg
