#include "plugin/runtime/record_binding.h"

#include <charconv>

namespace memcg::runtime {
namespace {

// The next path component of `path`, consumed.
std::string_view next_part(std::string_view& path) noexcept {
  const size_t slash = path.find('/');
  const std::string_view part = path.substr(0, slash);
  path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
  return part;
}

// The uid in "<prefix><uid><suffix>", or nullopt.
std::optional<uint32_t> uid_in(std::string_view part, std::string_view prefix, std::string_view suffix) noexcept {
  if (part.size() <= prefix.size() + suffix.size() || !part.starts_with(prefix) || !part.ends_with(suffix))
    return std::nullopt;
  const std::string_view digits = part.substr(prefix.size(), part.size() - prefix.size() - suffix.size());
  uint32_t v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ec != std::errc{} || r.ptr != digits.data() + digits.size()) return std::nullopt;
  return v;
}

void fill(std::string& to, const std::string& from) {
  if (to.empty()) to = from;
}

// id -> shallowest cgroup (first in table order at equal depth).
using Shallowest = std::unordered_map<std::string_view, const BindCandidate*>;

void keep_shallowest(Shallowest& m, const BindCandidate& c) {
  auto [it, fresh] = m.try_emplace(c.container_id, &c);
  if (!fresh && c.depth < it->second->depth) it->second = &c;
}

}  // namespace

std::optional<uint32_t> cgroup_owner(std::string_view cgroup) noexcept {
  std::string_view rest = cgroup;
  if (next_part(rest) != "user.slice") return std::nullopt;
  const auto slice = uid_in(next_part(rest), "user-", ".slice");
  if (!slice) return std::nullopt;
  const auto instance = uid_in(next_part(rest), "user@", ".service");
  if (!instance || *instance != *slice) return std::nullopt;
  return instance;
}

BoundRecords bind_records(std::span<const BindCandidate> cgroups, const RecordMap* hooks,
                          std::span<const EngineAnswers> engines) {
  // Who owns each cgroup, once.
  std::vector<uint32_t> owner(cgroups.size());
  for (size_t i = 0; i < cgroups.size(); ++i) owner[i] = cgroup_owner(cgroups[i].path).value_or(0);

  BoundRecords out;
  std::unordered_map<std::string_view, BoundRecord*> by_cgroup;  // root's bound records, to fill
  if (hooks) {
    Shallowest named;
    for (size_t i = 0; i < cgroups.size(); ++i) {
      const BindCandidate& c = cgroups[i];
      if (owner[i] != 0 || c.container_id.empty()) continue;
      const auto it = hooks->find(std::string(c.container_id));
      if (it != hooks->end() && cgroups_path_names(it->second.cgroups_path, c.path)) keep_shallowest(named, c);
    }
    for (const auto& [id, c] : named) {
      auto it = out.emplace(std::string(id), BoundRecord{hooks->at(std::string(id)), 0, std::string(c->path)});
      by_cgroup.emplace(it->second.cgroup, &it->second);
    }
  }
  for (const EngineAnswers& e : engines) {
    if (!e.records || e.records->empty()) continue;
    Shallowest where;
    for (size_t i = 0; i < cgroups.size(); ++i)
      if (owner[i] == e.owner && !cgroups[i].container_id.empty() && cgroups[i].runtime == e.runtime)
        keep_shallowest(where, cgroups[i]);
    for (const auto& [id, rec] : *e.records) {
      const auto w = where.find(id);
      if (w == where.end()) continue;  // no cgroup of its owner (yet): nothing to bind it to
      const std::string_view path = w->second->path;
      if (e.owner == 0)
        if (auto same = by_cgroup.find(path); same != by_cgroup.end() && same->second->record.id == id) {
          ContainerRecord& r = same->second->record;  // the hook's fields win
          fill(r.name, rec.name);
          fill(r.image, rec.image);
          fill(r.pod, rec.pod);
          fill(r.namespace_, rec.namespace_);
          fill(r.pod_uid, rec.pod_uid);
          r.sandbox = r.sandbox || rec.sandbox;
          continue;
        }
      auto it = out.emplace(id, BoundRecord{rec, e.owner, std::string(path)});
      if (e.owner == 0) by_cgroup.emplace(it->second.cgroup, &it->second);
    }
  }
  return out;
}

const ContainerRecord* record_for(const BoundRecords& records, std::string_view container_id,
                                  std::string_view cgroup) noexcept {
  if (container_id.empty()) return nullptr;
  auto [it, end] = records.equal_range(container_id);
  for (; it != end; ++it)
    if (it->second.cgroup == cgroup) return &it->second.record;
  return nullptr;
}

}  // namespace memcg::runtime
