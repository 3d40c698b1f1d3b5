#include "plugin/runtime/merge_records.h"

namespace memcg::runtime {
namespace {

void fill(std::string& to, const std::string& from) {
  if (to.empty()) to = from;
}

}  // namespace

RecordMap merge_records(RecordMap base, const RecordMap& engine,
                        const std::unordered_map<std::string, std::string>& outermost) {
  RecordMap out = std::move(base);
  for (const auto& [id, e] : engine) {
    auto where = outermost.find(id);
    if (where == outermost.end()) continue;  // no cgroup (yet): nothing to bind it to
    auto [it, fresh] = out.try_emplace(id, e);
    ContainerRecord& r = it->second;
    if (fresh || r.cgroups_path.empty()) r.cgroups_path = "/" + where->second;  // cgroupfs notation: exactly this cgroup
    if (!fresh) {
      fill(r.name, e.name);
      fill(r.image, e.image);
      fill(r.pod, e.pod);
      fill(r.namespace_, e.namespace_);
      fill(r.pod_uid, e.pod_uid);
    }
  }
  return out;
}

}  // namespace memcg::runtime
