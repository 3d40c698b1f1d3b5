// The cadvisor profile's metric table: the memory series of the kubelet's
// /metrics/cadvisor (cAdvisor's Prometheus collector with the kubelet's label
// function), under their names, types and labels, computed from the same
// cgroup v2 files as cAdvisor's libcontainer handler. docs/kubernetes.md has
// each definition with its source.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "exporter/exposition/metrics.h"

namespace memcg::exporter {

std::span<const MetricDef> cadvisor_table() noexcept;

// Whether a series of the exporter's own table is served with the cadvisor
// profile: the identity and freshness series (keyed by `id`, so they join
// with the compat series on it) and the exporter's own lean series.
bool served_with_cadvisor(const MetricDef& def) noexcept;

// The kubelet's labels of one cgroup: id (the cgroup's path from the root,
// "/" for the root), name (the runtime's alias: the container id on
// containerd and CRI-O, the container's name on Docker and podman), image,
// container (the Kubernetes container name; "" for pods, the sandbox and
// anything else), pod and namespace (a pod's cgroup gets its pod's).
struct CadvisorLabels {
  std::string id;
  std::string_view name, image, container, pod, namespace_;
};

// Pod UID -> pod name and namespace, from the records of the pod's containers
// (what the kubelet's GetPodByCgroupfs gives a pod cgroup).
using PodNames = std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>>;
PodNames pod_names(const Snapshot& snap);
CadvisorLabels cadvisor_labels(const Snapshot& snap, const CgroupView& c, const PodNames& pods);

}  // namespace memcg::exporter
