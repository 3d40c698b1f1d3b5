#include "plugin/runtime/containerd_record.h"

#include <string_view>

#include "plugin/runtime/bounded_json.h"

namespace memcg::runtime {

std::optional<ContainerRecord> containerd_record(const ContainerdContainer& c, std::string& error) {
  if (!valid_container_id(c.id)) {
    error = "containerd container id is not usable";
    return std::nullopt;
  }
  OciState state;
  state.id = c.id;
  state.annotations.id = c.id;
  nlohmann::json labels = nlohmann::json::object();
  for (size_t i = 0; i < c.labels.size() && i < kMaxContainerdLabels; ++i)
    labels[clean_value(c.labels[i].first)] = c.labels[i].second;  // values are cleaned when taken
  fill_from_annotations(labels, state.annotations);  // the labels first: the kubelet's names
  ContainerRecord r = state.annotations;
  // The spec adds what the labels lack (the CRI annotations) and, above all,
  // the cgroup it names.
  if (!c.spec.empty() && std::string_view(c.spec_type).ends_with("opencontainers/runtime-spec/1/Spec")) {
    auto from_spec = record_from_config(state, c.spec, error);
    if (!from_spec) return std::nullopt;
    r = std::move(*from_spec);
  }
  if (!c.image.empty()) r.image = clean_value(c.image);
  if (r.name.empty())
    if (auto it = labels.find(kContainerdKindLabel); it != labels.end() && it->is_string())
      r.name = clean_value(it->get<std::string>());
  return r;
}

}  // namespace memcg::runtime
