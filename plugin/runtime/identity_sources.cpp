#include "plugin/runtime/identity_sources.h"

#include <algorithm>
#include <cerrno>

#include "plugin/runtime/user_socket.h"

namespace memcg::runtime {

IdentitySources::~IdentitySources() = default;

void IdentitySources::configure(SourcesConfig config) {
  if (config.records_dir != config_.records_dir) hooks_.reset();
  const bool timeout_changed = config.engine_timeout != config_.engine_timeout;
  for (size_t k = 0; k < kEngineCount; ++k)
    if (config.engine_sockets[k] != config_.engine_sockets[k] || timeout_changed) retire(k, engines_[k]);
  if (config.podman_user_socket != config_.podman_user_socket || timeout_changed)
    retire_user_engines([](uint32_t) { return true; });
  if (containerd_ && (config.containerd_socket != config_.containerd_socket ||
                      config.containerd_namespaces != config_.containerd_namespaces || timeout_changed)) {
    const ContainerdStats s = containerd_->stats();
    for (size_t r = 0; r < kLookupResultCount; ++r) containerd_retired_.lookups[r] += s.lookups[r];
    containerd_retired_.lists_ok += s.lists_ok;
    containerd_retired_.lists_failed += s.lists_failed;
    containerd_retired_.events += s.events;
    containerd_.reset();
  }
  config_ = std::move(config);
}

void IdentitySources::retire(size_t k, std::unique_ptr<EngineClient>& engine) {
  if (!engine) return;
  const EngineStats s = engine->stats();
  for (size_t r = 0; r < kLookupResultCount; ++r) retired_lookups_[k][r] += s.lookups[r];
  engine.reset();
}

template <typename Pred>
void IdentitySources::retire_user_engines(Pred drop) {
  const size_t podman = engine_of("podman");
  for (auto it = user_engines_.begin(); it != user_engines_.end();) {
    if (!drop(it->first)) {
      ++it;
      continue;
    }
    retire(podman, it->second);
    it = user_engines_.erase(it);
  }
}

LookupWorker& IdentitySources::worker() {
  if (!worker_) worker_ = std::make_unique<LookupWorker>();
  return *worker_;
}

std::unique_ptr<EngineClient> IdentitySources::make_client(std::string socket) {
  worker();
  return std::make_unique<EngineClient>(EngineClient::Options{.sockets = {std::move(socket)}, .timeout = config_.engine_timeout},
                                        *worker_);
}

void IdentitySources::refresh(bool rescanned, const ForEachContainerCgroup& cgroups, TimePoint now,
                              std::vector<IoError>& errors) {
  if (!config_.records_dir.empty()) {
    if (!hooks_) hooks_ = std::make_unique<RecordStore>(config_.records_dir);
    hooks_->refresh(rescanned, errors);
  }
  for (size_t k = 0; k < kEngineCount; ++k) {
    if (config_.engine_sockets[k].empty() || engines_[k]) continue;
    engines_[k] = make_client(config_.engine_sockets[k]);
    rescanned = true;  // hand it the live ids now, not at the next rescan
  }
  if (!config_.containerd_socket.empty() && !containerd_)
    containerd_ = std::make_unique<ContainerdClient>(
        ContainerdClient::Options{.socket = config_.containerd_socket, .namespaces = config_.containerd_namespaces,
                                  .timeout = config_.engine_timeout},
        worker());
  if (containerd_)
    for (auto& e : containerd_->take_errors()) errors.push_back(std::move(e));
  const bool per_user = !config_.podman_user_socket.empty();
  if (per_user && !user_engines_started_) rescanned = true;
  user_engines_started_ = per_user;
  if (!per_user) retire_user_engines([](uint32_t) { return true; });
  if (rescanned) ask_engines(cgroups, now, errors);
  for (auto& engine : engines_)
    if (engine)
      for (auto& e : engine->take_errors()) errors.push_back(std::move(e));  // once per failing spell
  for (auto& [uid, engine] : user_engines_)
    for (auto& e : engine->take_errors()) errors.push_back(std::move(e));
  bind(rescanned, cgroups);
}

// After a rescan: each engine is asked about the live ids of the cgroups it
// may name (root's engines those outside the users' instances, a user's
// engine those in that user's instance), and records of gone containers age out.
void IdentitySources::ask_engines(const ForEachContainerCgroup& cgroups, TimePoint now, std::vector<IoError>& errors) {
  // A record is created at createRuntime, before its cgroup may be seen; only
  // records missing for two rescans (at least 30 s) are dropped.
  std::unordered_set<std::string> live;
  std::array<std::unordered_set<std::string>, kEngineCount> engine_ids;
  std::map<uint32_t, std::unordered_set<std::string>> user_ids;
  const size_t kPodman = engine_of("podman");
  const bool per_user = !config_.podman_user_socket.empty();
  cgroups([&](const BindCandidate& c) {
    live.emplace(c.container_id);
    const size_t k = engine_of(c.runtime);
    if (k == kEngineCount) return;
    const uint32_t owner = cgroup_owner(c.path).value_or(0);
    if (owner == 0) {
      if (engines_[k]) engine_ids[k].emplace(c.container_id);
    } else if (k == kPodman && per_user) {
      user_ids[owner].emplace(c.container_id);  // rootless: its user's engine, never root's
    }
  });
  if (hooks_) hooks_->expire(live, now, std::max<Duration>(2 * config_.rescan_interval, std::chrono::seconds(30)));
  for (size_t k = 0; k < kEngineCount; ++k)
    if (engines_[k]) engines_[k]->want(engine_ids[k], now);
  ask_user_engines(user_ids, now, errors);
}

// A client per user with containers now, at most kMaxUserEngines; a user
// whose containers are all gone has its client and answers dropped.
void IdentitySources::ask_user_engines(const std::map<uint32_t, std::unordered_set<std::string>>& user_ids,
                                       TimePoint now, std::vector<IoError>& errors) {
  retire_user_engines([&](uint32_t uid) { return !user_ids.count(uid); });
  bool refused = false;
  for (const auto& [uid, ids] : user_ids) {
    auto it = user_engines_.find(uid);
    if (it == user_engines_.end()) {
      if (user_engines_.size() >= kMaxUserEngines) {
        // Said once while it lasts: those containers keep their path's labels.
        if (!user_engines_refused_)
          errors.push_back({"ask the podman engine of user", std::to_string(uid) + " (more than " +
                                std::to_string(kMaxUserEngines) + " users with containers)", EUSERS});
        refused = true;
        continue;
      }
      it = user_engines_.emplace(uid, make_client(user_socket(config_.podman_user_socket, uid))).first;
    }
    it->second->want(ids, now);
  }
  user_engines_refused_ = refused;
}

// Compared in place: this runs every pass, and a quiet one allocates nothing.
bool IdentitySources::unchanged_since_bound(const std::shared_ptr<const RecordMap>& hooks) const {
  if (!bound_ || hooks != bound_hooks_) return false;
  if ((containerd_ ? containerd_->generation() : 0) != bound_containerd_gen_) return false;
  for (size_t k = 0; k < kEngineCount; ++k)
    if ((engines_[k] ? engines_[k]->generation() : 0) != bound_engine_gen_[k]) return false;
  if (user_engines_.size() != bound_user_gen_.size()) return false;
  size_t i = 0;
  for (const auto& [uid, engine] : user_engines_)
    if (bound_user_gen_[i++] != std::pair{uid, engine->generation()}) return false;
  return true;
}

// The records the outputs see, each bound to the one cgroup its source owns
// (record_binding.h); rebuilt when a source changed or a rescan may have
// moved a container's cgroup.
// The records bound by the cgroup their spec names: the hook's and
// containerd's (both root's). For an id both know, the hook's fields win and
// containerd's fill the empty ones; merged again only when either changed.
std::shared_ptr<const RecordMap> IdentitySources::path_records() {
  auto hooks = hooks_ ? hooks_->records() : nullptr;
  if (!containerd_) return hooks;
  const uint64_t gen = containerd_->generation();
  if (merged_paths_ && hooks == merged_hooks_ && gen == merged_containerd_gen_) return merged_paths_;
  auto from_containerd = containerd_->records();
  auto merged = std::make_shared<RecordMap>(*from_containerd);
  if (hooks)
    for (const auto& [id, h] : *hooks) {
      auto [it, added] = merged->emplace(id, h);
      if (added) continue;
      ContainerRecord& r = it->second;
      const ContainerRecord c = std::exchange(r, h);
      for (auto [field, fill] : {std::pair{&r.name, &c.name}, {&r.image, &c.image}, {&r.pod, &c.pod},
                                 {&r.namespace_, &c.namespace_}, {&r.pod_uid, &c.pod_uid}, {&r.cgroups_path, &c.cgroups_path}})
        if (field->empty()) *field = *fill;
      r.sandbox = r.sandbox || c.sandbox;
    }
  merged_paths_ = std::move(merged);
  merged_hooks_ = std::move(hooks);
  merged_containerd_gen_ = gen;
  return merged_paths_;
}

void IdentitySources::bind(bool rescanned, const ForEachContainerCgroup& cgroups) {
  auto hooks = hooks_ ? hooks_->records() : nullptr;
  if (!rescanned && unchanged_since_bound(hooks)) return;
  bound_containerd_gen_ = containerd_ ? containerd_->generation() : 0;
  auto paths = path_records();
  const bool any_engine = !user_engines_.empty() || std::any_of(engines_.begin(), engines_.end(), [](auto& e) { return e != nullptr; });
  if (!paths && !any_engine) {
    bound_.reset();
    bound_hooks_.reset();
    return;
  }
  std::vector<BindCandidate> candidates;
  cgroups([&](const BindCandidate& c) { candidates.push_back(c); });
  std::vector<EngineAnswers> answers;
  std::vector<std::shared_ptr<const RecordMap>> held;  // kept alive while binding
  held.reserve(kEngineCount + user_engines_.size());
  for (size_t k = 0; k < kEngineCount; ++k) {
    bound_engine_gen_[k] = engines_[k] ? engines_[k]->generation() : 0;  // before records(): a newer answer rebinds
    if (!engines_[k]) continue;
    held.push_back(engines_[k]->records());
    answers.push_back({held.back().get(), kEngines[k], 0});
  }
  bound_user_gen_.clear();
  for (const auto& [uid, engine] : user_engines_) {
    bound_user_gen_.emplace_back(uid, engine->generation());
    held.push_back(engine->records());
    answers.push_back({held.back().get(), "podman", uid});
  }
  // A rebind after every rescan mostly finds what the last one did: keep
  // that map then, so that what is keyed on it (the scrape's compressed
  // identity head, exporter/http/scrape_cache.h) stays valid. A new map each
  // rescan re-rendered and recompressed the head at every scrape: on a
  // Kubernetes node's long paths and names, more than half of a scrape's CPU.
  BoundRecords fresh = bind_records(candidates, paths.get(), answers);
  if (!bound_ || *bound_ != fresh) bound_ = std::make_shared<const BoundRecords>(std::move(fresh));
  bound_hooks_ = std::move(hooks);
}

std::array<std::optional<EngineStats>, kEngineCount> IdentitySources::engine_stats() const {
  std::array<std::optional<EngineStats>, kEngineCount> out;
  const size_t podman = engine_of("podman");
  for (size_t k = 0; k < kEngineCount; ++k) {
    const bool on = !config_.engine_sockets[k].empty() || (k == podman && !config_.podman_user_socket.empty());
    if (!on) continue;
    EngineStats total;
    total.lookups = retired_lookups_[k];
    auto add = [&](const EngineClient& c) {
      const EngineStats s = c.stats();
      for (size_t r = 0; r < kLookupResultCount; ++r) total.lookups[r] += s.lookups[r];
      total.cached += s.cached;
    };
    if (engines_[k]) add(*engines_[k]);
    if (k == podman)
      for (const auto& [uid, engine] : user_engines_) add(*engine);
    out[k] = total;
  }
  return out;
}

std::optional<ContainerdStats> IdentitySources::containerd_stats() const {
  if (config_.containerd_socket.empty()) return std::nullopt;
  ContainerdStats s = containerd_ ? containerd_->stats() : ContainerdStats{};
  for (size_t r = 0; r < kLookupResultCount; ++r) s.lookups[r] += containerd_retired_.lookups[r];
  s.lists_ok += containerd_retired_.lists_ok;
  s.lists_failed += containerd_retired_.lists_failed;
  s.events += containerd_retired_.events;
  return s;
}

}  // namespace memcg::runtime
