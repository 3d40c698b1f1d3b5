#include "base/parse/stat_keys.h"

#include <array>

namespace memcg::parse {
namespace {

using enum StatKind;

// Kernel print order as of 6.12 (mm/memcontrol.c memory_stats[] followed by
// memcg_vm_event_stat[]). Keys that only some versions print are included; a
// kernel that lacks them simply does not mark them present.
constexpr StatKeyInfo kStatKeys[] = {
    {"anon", bytes},
    {"file", bytes},
    {"kernel", bytes},
    {"kernel_stack", bytes},
    {"pagetables", bytes},
    {"sec_pagetables", bytes},
    {"percpu", bytes},
    {"sock", bytes},
    {"vmalloc", bytes},
    {"shmem", bytes},
    {"zswap", bytes},
    {"zswapped", bytes},
    {"file_mapped", bytes},
    {"file_dirty", bytes},
    {"file_writeback", bytes},
    {"swapcached", bytes},
    {"anon_thp", bytes},
    {"file_thp", bytes},
    {"shmem_thp", bytes},
    {"inactive_anon", bytes},
    {"active_anon", bytes},
    {"inactive_file", bytes},
    {"active_file", bytes},
    {"unevictable", bytes},
    {"slab_reclaimable", bytes},
    {"slab_unreclaimable", bytes},
    {"hugetlb", bytes},
    {"slab", bytes},
    {"workingset_refault_anon", events},
    {"workingset_refault_file", events},
    {"workingset_activate_anon", events},
    {"workingset_activate_file", events},
    {"workingset_restore_anon", events},
    {"workingset_restore_file", events},
    {"workingset_nodereclaim", events},
    {"pgdemote_kswapd", events},
    {"pgdemote_direct", events},
    {"pgdemote_khugepaged", events},
    {"pgdemote_proactive", events},
    {"pgpromote_success", events},
    {"pswpin", events},
    {"pswpout", events},
    {"pgscan", events},
    {"pgsteal", events},
    {"pgscan_kswapd", events},
    {"pgscan_direct", events},
    {"pgscan_khugepaged", events},
    {"pgscan_proactive", events},
    {"pgsteal_kswapd", events},
    {"pgsteal_direct", events},
    {"pgsteal_khugepaged", events},
    {"pgsteal_proactive", events},
    {"pgfault", events},
    {"pgmajfault", events},
    {"pgrefill", events},
    {"pgactivate", events},
    {"pgdeactivate", events},
    {"pglazyfree", events},
    {"pglazyfreed", events},
    {"swpin_zero", events},
    {"swpout_zero", events},
    {"zswpin", events},
    {"zswpout", events},
    {"zswpwb", events},
    {"thp_fault_alloc", events},
    {"thp_collapse_alloc", events},
    {"thp_swpout", events},
    {"thp_swpout_fallback", events},
    {"numa_pages_migrated", events},
    {"numa_pte_updates", events},
    {"numa_hint_faults", events},
    // 5.x kernels before the anon/file split of workingset_* (v5.9).
    {"workingset_refault", events},
    {"workingset_activate", events},
    {"workingset_restore", events},
};

static_assert(std::size(kStatKeys) == kStatKeyCount, "update kStatKeyCount in stat_keys.h");

constexpr auto kStatNames = [] {
  std::array<std::string_view, std::size(kStatKeys)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kStatKeys[i].name;
  return names;
}();

}  // namespace

std::span<const StatKeyInfo> stat_keys() noexcept { return kStatKeys; }

const KeyTable& stat_key_table() noexcept {
  static const KeyTable table{kStatNames};
  return table;
}

StatKind stat_kind(size_t index) noexcept {
  return index < std::size(kStatKeys) ? kStatKeys[index].kind : count;
}

const KeySet& stat_keys_of(StatKind kind) noexcept {
  static const std::array<KeySet, 3> sets = [] {
    std::array<KeySet, 3> out;
    for (size_t i = 0; i < std::size(kStatKeys); ++i) out[static_cast<size_t>(kStatKeys[i].kind)].set(i);
    return out;
  }();
  return sets[static_cast<size_t>(kind)];
}

}  // namespace memcg::parse
