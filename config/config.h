// The validated configuration. Everything here is plain data; loading (with
// source positions for errors) lives in load.h, rule matching in RuleSet.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/glob.h"
#include "config/units.h"
#include "base/parse/key_table.h"

namespace memcg::config {

// How much of the exposition is served (docs/metrics.md, "Profiles": what each adds).
// lean, standard and full are each a superset of the one before; `standard`
// is called "default" in the configuration file. `cadvisor` stands apart: the
// kubelet's cAdvisor memory series under their names (docs/kubernetes.md),
// with only the freshness series of this exporter's own.
enum class Profile : unsigned char { lean, standard, full, cadvisor };
std::string_view profile_name(Profile p) noexcept;  // "lean", "default", "full", "cadvisor"

// Which memory.stat keys become series. Known keys by bit; names this build
// does not know (a newer kernel's) are kept by name so they can be allowed too.
struct StatFilter {
  bool all = false;
  parse::KeySet known;
  std::vector<std::string> unknown_names;

  bool allows(size_t known_index) const noexcept { return all || known.test(known_index); }
  bool allows_unknown(std::string_view name) const noexcept;
  static StatFilter defaults(Profile profile = Profile::standard);  // the documented allowlist of a profile
};

// The per-cgroup knobs of the update-aware cache, after defaults were applied.
struct Settings {
  uint64_t threshold = 0;         // bytes of probed change before memory.stat is re-read
  Duration max_age{};             // memory.stat is never older than this
  StatFilter stats;
  std::string source;             // "defaults" or "rule N (glob)"
  std::string name;               // the `rule` label: "default", or the rule's name (its glob unless named)
};

struct Rule {
  Glob match;
  std::optional<uint64_t> threshold;
  std::optional<Duration> max_age;
  std::optional<StatFilter> stats;
  std::string name;  // the `rule` label; "" = the glob's pattern
};

struct CollectorConfig {
  std::string root;  // empty: find the cgroup2 mount
  Duration probe_interval = std::chrono::seconds(1);
  Duration rescan_interval = std::chrono::seconds(10);
  // The limits and protections (memory.min/low/high/max, swap.max) are read
  // with memory.stat at most this often, and at once after a high, max or
  // OOM event: they change rarely, and five opens per read cost more than
  // the memory.stat read itself.
  Duration limits_max_age = std::chrono::seconds(60);
  int max_depth = 8;
  uint64_t max_cgroups = 20000;
  // The memory the collected cgroups' descriptors are held within: the
  // daemon's own cgroup limit, lowest memory.max or memory.high
  // (kMemoryBudgetAuto), none (0), or this many bytes.
  static constexpr uint64_t kMemoryBudgetAuto = UINT64_MAX;
  uint64_t memory_budget = kMemoryBudgetAuto;
  double max_stat_reads_per_second = 0;  // host-wide read budget; 0: unlimited
  std::vector<Glob> include;  // empty: everything
  std::vector<Glob> exclude;
  bool includes(std::string_view path) const noexcept;
};

struct WebConfig {
  std::vector<std::string> listen{":9756"};  // ":PORT" = every address, "HOST:PORT", "[V6]:PORT"
  bool refresh_api = false;                  // POST /api/v1/refresh (forces memory.stat reads)
  uint32_t max_connections = 8;              // concurrent requests served (workers); more wait in the gate
  // Connections open at once, idle and slow ones included (each costs one
  // descriptor, no worker), and per client (an IPv4 address, an IPv6 /64).
  uint32_t max_open_connections = 1024;
  uint32_t max_connections_per_client = 64;
  // Longest a client may take to send its request line and headers (total,
  // not per byte: a slowloris trickle is cut off) and to read the response.
  Duration request_timeout = std::chrono::seconds(10);
  // How long a kept-alive connection may sit idle between requests. CivetWeb
  // holds a worker per connection, so an idle one blocks a worker this long:
  // short, since Prometheus (every 15 s or so) reconnects at no real cost.
  Duration idle_timeout = std::chrono::seconds(2);
};

struct ContainersConfig {
  // Where the OCI hook writes container records; "" disables reading them.
  std::string records_dir = "/run/memcg-exporter/containers";
  // Engine API sockets asked for the name and image of Docker's and podman's
  // containers (each engine about its own); "" = off, the default. Access to
  // either socket is root-equivalent: see docs/containers.md.
  std::string docker_socket;
  std::string podman_socket;
  // Rootless podman: each user's own API socket, "%U" standing for the uid
  // of the user@UID.service a container's cgroup sits under; "" = off. Those
  // containers are asked of their user's socket only, never of podman_socket.
  std::string podman_user_socket;
  Duration engine_timeout = std::chrono::seconds(2);  // per lookup
  // containerd's gRPC API ("" = off): names of the containers in these
  // namespaces (k8s.io is the CRI plugin's, where a kubelet's pods run).
  std::string containerd_socket;
  std::vector<std::string> containerd_namespaces = {"k8s.io"};

  // The socket of engine k in runtime::kEngines order (docker, podman).
  const std::string& engine_socket(size_t k) const noexcept { return k == 0 ? docker_socket : podman_socket; }
};

// Identity labels that can be copied onto every per-cgroup series (they are
// always on memcg_cgroup_info). Every per-cgroup series carries `cgroup_id`;
// "cgroup", the path, is the first of these.
inline constexpr std::string_view kIdentityLabels[] = {"cgroup", "runtime", "container_id", "container_name", "image",
                                                       "pod", "namespace", "pod_uid", "qos_class", "unit"};

struct MetricsConfig {
  Profile profile = Profile::standard;
  // Subset of kIdentityLabels, in this order. The full profile always has
  // "cgroup" here (the 0.1 exposition's per-series label).
  std::vector<std::string> identity_labels;
  // A removed cgroup's counters (memory.events, oomd's kills) and identity
  // stay in the exposition this long, marked by
  // memcg_cgroup_removed_timestamp_seconds, so a container OOM-killed and
  // removed between two scrapes still shows its kill to increase(); at most
  // removed_max of them (the oldest go first, counted). 0s: none kept.
  Duration removed_retention = std::chrono::minutes(2);
  uint64_t removed_max = 1000;
};

// Facts about the host the defaults depend on; injected so tests are exact.
struct HostFacts {
  uint64_t page_size = 4096;
  uint64_t online_cpus = 1;
  static HostFacts probe();
};

// The kernel flushes a memcg's stats once more than MEMCG_CHARGE_BATCH (64)
// updates per online CPU are pending (mm/memcontrol.c, memcg_vmstats_needs_flush);
// each update is at least a page. Below that the kernel itself serves values
// off by up to this much, so re-reading sooner buys no accuracy.
uint64_t kernel_flush_slack(const HostFacts& host) noexcept;

class Config {
 public:
  CollectorConfig collector;
  WebConfig web;
  ContainersConfig containers;
  MetricsConfig metrics;
  Settings defaults;
  std::vector<Rule> rules;
  std::string source_path;  // file it came from, or "" for built-in defaults
  HostFacts host;

  // Built-in defaults for this host.
  static Config builtin(const HostFacts& host);

  // The settings for a cgroup path: the first rule whose glob matches, each
  // unset key falling back to [defaults]. Pointers are shared per rule, so a
  // snapshot holding one stays valid after a reload.
  std::shared_ptr<const Settings> settings_for(std::string_view path) const;

  // Call after changing defaults/rules so settings_for sees them.
  void resolve();
  // Defaults first, then one entry per rule, in rule order.
  std::vector<std::shared_ptr<const Settings>> resolved() const;

 private:
  std::shared_ptr<const Settings> resolved_defaults_;
  std::vector<std::shared_ptr<const Settings>> resolved_rules_;
};

// Thrown only while loading configuration; carries "file:line:col: key: message".
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, uint32_t line, uint32_t column, std::string key, std::string message);
  const std::string& file() const noexcept { return file_; }
  uint32_t line() const noexcept { return line_; }
  uint32_t column() const noexcept { return column_; }
  const std::string& key() const noexcept { return key_; }

 private:
  std::string file_, key_;
  uint32_t line_, column_;
};

}  // namespace memcg::config
