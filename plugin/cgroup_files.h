// The cgroup files the collector reads, one row each: its name, whether it
// is kept open, when the reader reads it, and the label its values carry.
// From the table: discovery opens every `kept` file, one helper
// (CgroupReader::read) reads any of them and files its errors under the
// kind, the per-file error counters (metrics and JSON) follow it, and the
// limit files are read, exported and written to JSON in its order.
//
// Adding a limit file (a single value read with the limits) is its row
// here, its LimitKind (snapshot.h; checked against the table below) and
// nothing else: the reader, the memcg_memory_limit_bytes series and the
// JSON "limits" object pick it up. Another kind of file is its row, its
// parser (base/parse/), its field (snapshot.h), its metric row
// (exporter/exposition/metric_table.cpp) and the reader's call at its ReadAt.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace memcg {

enum class FileKind : unsigned char {
  stat, current, swap_current, events, pressure, peak, min, low, high, max, swap_max, events_local, swap_events,
  cgroup_events
};
inline constexpr size_t kFileKindCount = 14;

enum class FileAccess : unsigned char {
  kept,  // opened at discovery, re-read with one pread per use
  // Polled files read rarely: memory.swap.events when the kernel flags it,
  // cgroup.events on a cgroup's exit. Kept open like the others while the
  // fd budget has room for them after every cgroup's kept files (epoll
  // watches an open file); otherwise memory.swap.events is read every
  // max_age with systemd-oomd's record, and an exit is learnt from
  // memory.events or a rescan.
  kept_if_room,
  // Read so rarely that holding them open costs more than opening them: the
  // limits (re-read only after inotify saw a write, collector.limits_max_age
  // where it cannot watch) and memory.events.local (after memory.events
  // changed). A kernfs file keeps a page of kernel memory, its seq_file
  // buffer, charged to the reader's cgroup, from its first read until it is
  // closed: these six, held, were 26 KiB of kernel memory per cgroup
  // (docs/operations.md, "Sizing: memory"). Opened, read and closed each time.
  per_read,
};

// When CgroupReader reads a file.
enum class ReadAt : unsigned char {
  stat,          // memory.stat: when the update-aware cache decides (cache/flush_policy.h)
  every_probe,   // every pass (memory.swap.current not where swap is known off)
  flagged,       // a pass where epoll flagged it, and with every memory.stat read
  moved,         // a pass where usage moved, and with a memory.stat read that asks
  with_stat,     // with every memory.stat read
  limit,         // with memory.stat at most every limits_max_age: StatRecord::limits, in table order
  after_events,  // when memory.events changed
  // cgroup.events: when the kernel flags it, which it does at once when the
  // cgroup's last task exits ("populated 0"), before the task's parent can
  // reap it and so before the cgroup can be removed. Its event files are
  // read then: the kernel sends a memory.events change at most every 10 ms
  // per file and drops a notification still held back when the cgroup is
  // removed, so an OOM kill counted right after a `max` event, in a
  // container removed within those 10 ms, was otherwise never read.
  on_exit,
};

struct CgroupFile {
  FileKind kind;
  std::string_view name;
  FileAccess access;
  ReadAt when;
  std::string_view label;  // its values' key in JSON and labels ("swap_max")
};

// In FileKind order.
inline constexpr std::array<CgroupFile, kFileKindCount> kCgroupFiles = {{
    {FileKind::stat, "memory.stat", FileAccess::kept, ReadAt::stat, "stat"},
    {FileKind::current, "memory.current", FileAccess::kept, ReadAt::every_probe, "current"},
    {FileKind::swap_current, "memory.swap.current", FileAccess::kept, ReadAt::every_probe, "swap_current"},
    {FileKind::events, "memory.events", FileAccess::kept, ReadAt::flagged, "events"},
    {FileKind::pressure, "memory.pressure", FileAccess::kept, ReadAt::moved, "pressure"},
    {FileKind::peak, "memory.peak", FileAccess::kept, ReadAt::with_stat, "peak"},
    {FileKind::min, "memory.min", FileAccess::per_read, ReadAt::limit, "min"},
    {FileKind::low, "memory.low", FileAccess::per_read, ReadAt::limit, "low"},
    {FileKind::high, "memory.high", FileAccess::per_read, ReadAt::limit, "high"},
    {FileKind::max, "memory.max", FileAccess::per_read, ReadAt::limit, "max"},
    {FileKind::swap_max, "memory.swap.max", FileAccess::per_read, ReadAt::limit, "swap_max"},
    {FileKind::events_local, "memory.events.local", FileAccess::per_read, ReadAt::after_events, "events_local"},
    {FileKind::swap_events, "memory.swap.events", FileAccess::kept_if_room, ReadAt::flagged, "swap_events"},
    {FileKind::cgroup_events, "cgroup.events", FileAccess::kept_if_room, ReadAt::on_exit, "cgroup_events"},
}};

// Row i describes FileKind i: the reader and the error counters index the table by kind.
static_assert([] {
  for (size_t i = 0; i < kCgroupFiles.size(); ++i)
    if (static_cast<size_t>(kCgroupFiles[i].kind) != i) return false;
  return true;
}());

// Descriptors a collected cgroup holds: at least its directory (the per_read
// files are opened relative to it) and every kept file, at most the
// polled kept_if_room files too. The fd budget collects every cgroup it can
// with the least, then keeps those with what is left. A cgroup without some
// file (no swap accounting) holds fewer.
constexpr size_t kMinFdsPerCgroup = [] {
  size_t n = 1;
  for (const auto& f : kCgroupFiles) n += f.access == FileAccess::kept ? 1 : 0;
  return n;
}();
constexpr size_t kMaxFdsPerCgroup = [] {
  size_t n = 1;
  for (const auto& f : kCgroupFiles) n += f.access != FileAccess::per_read ? 1 : 0;
  return n;
}();

// The limit files, in table order: StatRecord::limits[i] holds kLimitFiles[i]'s value.
inline constexpr size_t kLimitFileCount = [] {
  size_t n = 0;
  for (const auto& f : kCgroupFiles) n += f.when == ReadAt::limit ? 1 : 0;
  return n;
}();
inline constexpr std::array<FileKind, kLimitFileCount> kLimitFiles = [] {
  std::array<FileKind, kLimitFileCount> a{};
  size_t i = 0;
  for (const auto& f : kCgroupFiles)
    if (f.when == ReadAt::limit) a[i++] = f.kind;
  return a;
}();

constexpr const CgroupFile& cgroup_file(FileKind k) noexcept { return kCgroupFiles[static_cast<size_t>(k)]; }
constexpr std::string_view file_name(FileKind k) noexcept { return cgroup_file(k).name; }

}  // namespace memcg
