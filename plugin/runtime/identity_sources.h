// Every source of container names in one place: the OCI hook's record files,
// the Docker and podman Engine APIs (root's, and each user's for rootless
// podman), their lookups on one LookupWorker thread, and the binding of their
// records to the cgroups each source owns (record_binding.h). The collector
// hands over what a rescan found and takes the bound records; it owns no
// identity source itself.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "plugin/clock.h"
#include "plugin/error.h"
#include "plugin/runtime/containerd_client.h"
#include "plugin/runtime/engine_client.h"
#include "plugin/runtime/engine_stats.h"
#include "plugin/runtime/lookup_worker.h"
#include "plugin/runtime/record_binding.h"
#include "plugin/runtime/record_store.h"

namespace memcg::runtime {

struct SourcesConfig {
  std::string records_dir;  // OCI hook records; "" = off
  std::array<std::string, kEngineCount> engine_sockets;  // root's, by kEngines; "" = off
  std::string podman_user_socket;  // rootless podman, "%U" = the uid; "" = off
  Duration engine_timeout = std::chrono::seconds(2);
  Duration rescan_interval = std::chrono::seconds(10);
  std::string containerd_socket;  // "" = off
  std::vector<std::string> containerd_namespaces;
};

// Calls its argument for each collected cgroup that a path names as a
// container (container_id not empty).
using ForEachContainerCgroup = std::function<void(const std::function<void(const BindCandidate&)>&)>;

class IdentitySources {
 public:
  // Users whose rootless podman engines are asked at once; containers of
  // further users keep the labels their paths give (an error says so once).
  static constexpr size_t kMaxUserEngines = 16;

  IdentitySources() = default;
  ~IdentitySources();
  IdentitySources(const IdentitySources&) = delete;
  IdentitySources& operator=(const IdentitySources&) = delete;

  // At start and every reload: sources whose setting changed start over
  // (their counts kept for the counters).
  void configure(SourcesConfig config);

  // Every pass (collector thread): picks up hook records and engine answers,
  // hands the engines the live containers after a rescan (`rescanned`), and
  // rebinds when a source changed or the cgroups may have. `cgroups` is
  // walked only then. Errors come once per failing spell.
  void refresh(bool rescanned, const ForEachContainerCgroup& cgroups, TimePoint now, std::vector<IoError>& errors);

  // The records bound to their cgroups as of the last refresh; null when
  // every source is off.
  std::shared_ptr<const BoundRecords> records() const noexcept { return bound_; }
  // Per engine that is on: lookups since start (dropped clients included:
  // counters never go back) and answers kept.
  std::array<std::optional<EngineStats>, kEngineCount> engine_stats() const;
  // containerd's client, when on (its counts since start, reloads included).
  std::optional<ContainerdStats> containerd_stats() const;

 private:
  void ask_engines(const ForEachContainerCgroup& cgroups, TimePoint now, std::vector<IoError>& errors);
  void ask_user_engines(const std::map<uint32_t, std::unordered_set<std::string>>& user_ids, TimePoint now,
                        std::vector<IoError>& errors);
  void bind(bool rescanned, const ForEachContainerCgroup& cgroups);
  bool unchanged_since_bound(const std::shared_ptr<const RecordMap>& hooks) const;
  std::shared_ptr<const RecordMap> path_records();  // the hooks' and containerd's: bound by cgroupsPath
  LookupWorker& worker();  // started at first use
  std::unique_ptr<EngineClient> make_client(std::string socket);
  void retire(size_t k, std::unique_ptr<EngineClient>& engine);  // keeps its lookup counts
  template <typename Pred>
  void retire_user_engines(Pred drop);  // the users' clients for whose uid drop(uid) holds

  SourcesConfig config_;
  std::unique_ptr<RecordStore> hooks_;  // null when records_dir is ""
  std::unique_ptr<LookupWorker> worker_;  // started with the first engine client
  std::array<std::unique_ptr<EngineClient>, kEngineCount> engines_;  // null when off
  std::unique_ptr<ContainerdClient> containerd_;  // null when off
  ContainerdStats containerd_retired_;  // counts of clients dropped at reloads
  // Rootless podman: one client per user with containers, by uid.
  std::map<uint32_t, std::unique_ptr<EngineClient>> user_engines_;
  bool user_engines_started_ = false;
  bool user_engines_refused_ = false;  // a user over kMaxUserEngines was reported
  // Lookups of clients dropped since start, by engine.
  std::array<std::array<uint64_t, kLookupResultCount>, kEngineCount> retired_lookups_{};

  // The bound records and the inputs they were built from.
  std::shared_ptr<const BoundRecords> bound_;
  std::shared_ptr<const RecordMap> bound_hooks_;
  uint64_t bound_containerd_gen_ = 0;
  std::shared_ptr<const RecordMap> merged_paths_;  // hooks_ and containerd_'s records as of merged_*_
  std::shared_ptr<const RecordMap> merged_hooks_;
  uint64_t merged_containerd_gen_ = UINT64_MAX;
  std::array<uint64_t, kEngineCount> bound_engine_gen_{};
  std::vector<std::pair<uint32_t, uint64_t>> bound_user_gen_;
};

}  // namespace memcg::runtime
