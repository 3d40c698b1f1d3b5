#include "plugin/snapshot.h"

#include "plugin/cache/rates.h"

namespace memcg {

std::shared_ptr<const parse::StatValues> StatRecord::empty_stat_values() {
  static const auto empty = std::make_shared<const parse::StatValues>();
  return empty;
}

std::optional<double> StatRecord::rate(size_t k) const noexcept {
  if (since_prev <= Duration{0} || !prev_values || k >= parse::kStatKeyCount || !values->present.test(k) ||
      !prev_values->present.test(k))
    return std::nullopt;
  const uint64_t was = prev_values->values[k], is = values->values[k];
  switch (parse::stat_kind(k)) {
    case parse::StatKind::events: return cache::counter_rate(was, is, since_prev);
    case parse::StatKind::bytes: return cache::gauge_rate(was, is, since_prev);
    case parse::StatKind::count: break;
  }
  return std::nullopt;
}

std::string_view Snapshot::identity(const CgroupId& id, std::string_view label) const {
  const runtime::Identity& i = id.identity;
  if (label == "cgroup") return id.path;
  if (label == "runtime") return i.runtime;
  if (label == "container_id") return i.container_id;
  if (label == "qos_class") return i.qos_class;
  if (label == "unit") return i.unit;
  const runtime::ContainerRecord* r = record_for(id);
  if (label == "pod_uid") return !i.pod_uid.empty() || !r ? std::string_view(i.pod_uid) : std::string_view(r->pod_uid);
  if (!r) return {};
  if (label == "container_name") return r->name;
  if (label == "image") return r->image;
  if (label == "pod") return r->pod;
  if (label == "namespace") return r->namespace_;
  return {};
}

CgroupView& Snapshot::add_cgroup(std::shared_ptr<const CgroupId> id, std::shared_ptr<const config::Settings> settings) {
  auto r = std::make_shared<Roster>(roster ? *roster : Roster{});
  CgroupView& v = cgroups.emplace_back();
  v.id = id.get();
  v.settings = settings.get();
  r->ids.push_back(std::move(id));
  r->settings.push_back(std::move(settings));
  roster = std::move(r);
  return v;
}

}  // namespace memcg
