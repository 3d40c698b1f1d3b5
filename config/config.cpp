#include "config/config.h"

#include <unistd.h>

#include <algorithm>
#include <span>

#include "base/parse/stat_keys.h"

namespace memcg::config {

bool StatFilter::allows_unknown(std::string_view name) const noexcept {
  return all || std::find(unknown_names.begin(), unknown_names.end(), name) != unknown_names.end();
}

std::string_view profile_name(Profile p) noexcept {
  switch (p) {
    case Profile::lean: return "lean";
    case Profile::standard: return "default";
    case Profile::full: return "full";
    case Profile::cadvisor: return "cadvisor";
  }
  return "default";
}

StatFilter StatFilter::defaults(Profile profile) {
  // What the shipped dashboard and alerts use, and no more: memory.current's
  // breakdown (anon + file + kernel + sock; shmem is the tmpfs part of file),
  // the working-set input (inactive_file), major faults and file refaults
  // (the working set does not fit). workingset_refault_anon needs swap, so it
  // is in the full list only. 8 keys keep the default profile at <= 30 series
  // per cgroup in the worst case (docs/metrics.md, "Profiles").
  static constexpr std::string_view kLean[] = {"anon", "file", "kernel", "inactive_file"};
  static constexpr std::string_view kStandard[] = {"anon",          "file",       "kernel", "sock", "shmem",
                                                   "inactive_file", "pgmajfault", "workingset_refault_file"};
  // The 0.1 default allowlist: adds the LRU lists, slab, dirty/writeback
  // pages, reclaim scans and minor faults.
  static constexpr std::string_view kFull[] = {
      "anon", "file", "kernel", "kernel_stack", "pagetables", "sock", "shmem",
      "file_mapped", "file_dirty", "file_writeback", "inactive_anon", "active_anon",
      "inactive_file", "active_file", "unevictable", "slab_reclaimable", "slab_unreclaimable",
      "workingset_refault_anon", "workingset_refault_file", "pgscan", "pgsteal",
      "pgfault", "pgmajfault"};
  // What cAdvisor's memory series are made of (exporter/exposition/cadvisor_metrics.cpp).
  static constexpr std::string_view kCadvisor[] = {"anon", "file", "file_mapped", "inactive_file", "pgfault", "pgmajfault"};
  StatFilter f;
  const auto add = [&](std::span<const std::string_view> names) {
    for (auto name : names) f.known.set(*parse::stat_key_table().find(name));
  };
  switch (profile) {
    case Profile::lean: add(kLean); break;
    case Profile::standard: add(kStandard); break;
    case Profile::full: add(kFull); break;
    case Profile::cadvisor: add(kCadvisor); break;
  }
  return f;
}

bool CollectorConfig::includes(std::string_view path) const noexcept {
  if (!include.empty() &&
      std::none_of(include.begin(), include.end(), [&](const Glob& g) { return g.matches(path); }))
    return false;
  return std::none_of(exclude.begin(), exclude.end(), [&](const Glob& g) { return g.matches(path); });
}

HostFacts HostFacts::probe() {
  HostFacts h;
  const long page = sysconf(_SC_PAGESIZE);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (page > 0) h.page_size = static_cast<uint64_t>(page);
  if (cpus > 0) h.online_cpus = static_cast<uint64_t>(cpus);
  return h;
}

uint64_t kernel_flush_slack(const HostFacts& host) noexcept {
  constexpr uint64_t kMemcgChargeBatch = 64;
  return kMemcgChargeBatch * host.page_size * host.online_cpus;
}

Config Config::builtin(const HostFacts& host) {
  Config c;
  c.host = host;
  c.defaults.threshold = kernel_flush_slack(host);
  // Ten seconds: a scrape interval's worth of staleness at Prometheus' common
  // 15 s interval is invisible, while a fully idle cgroup costs one read per
  // 10 s instead of one per probe (10x fewer at the default probe interval).
  c.defaults.max_age = std::chrono::seconds(10);
  c.defaults.stats = StatFilter::defaults();
  c.resolve();
  return c;
}

void Config::resolve() {
  auto d = std::make_shared<Settings>(defaults);
  d->source = "defaults";
  d->name = "default";
  resolved_defaults_ = d;
  resolved_rules_.clear();
  for (size_t i = 0; i < rules.size(); ++i) {
    auto s = std::make_shared<Settings>(defaults);
    if (rules[i].threshold) s->threshold = *rules[i].threshold;
    if (rules[i].max_age) s->max_age = *rules[i].max_age;
    if (rules[i].stats) s->stats = *rules[i].stats;
    s->source = "rule " + std::to_string(i + 1) + " (" + rules[i].match.pattern() + ")";
    s->name = rules[i].name.empty() ? rules[i].match.pattern() : rules[i].name;
    resolved_rules_.push_back(std::move(s));
  }
}

std::vector<std::shared_ptr<const Settings>> Config::resolved() const {
  std::vector<std::shared_ptr<const Settings>> out{resolved_defaults_};
  out.insert(out.end(), resolved_rules_.begin(), resolved_rules_.end());
  return out;
}

std::shared_ptr<const Settings> Config::settings_for(std::string_view path) const {
  for (size_t i = 0; i < rules.size() && i < resolved_rules_.size(); ++i)
    if (rules[i].match.matches(path)) return resolved_rules_[i];
  return resolved_defaults_;
}

ConfigError::ConfigError(std::string file, uint32_t line, uint32_t column, std::string key,
                         std::string message)
    : std::runtime_error(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                         (key.empty() ? "" : key + ": ") + message),
      file_(std::move(file)),
      key_(std::move(key)),
      line_(line),
      column_(column) {}

}  // namespace memcg::config
