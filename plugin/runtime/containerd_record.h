// What containerd's own API says about a container, as a record: container
// name, pod, namespace and pod UID from the labels the CRI plugin copies from
// the kubelet's config (io.kubernetes.*; nerdctl's nerdctl/name in other
// namespaces), the image from the container, and the cgroup its OCI spec
// names (linux.cgroupsPath) so the record labels that cgroup only, exactly
// as a hook record does. Pure: no gRPC types, so it is tested on its own.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plugin/runtime/oci_record.h"

namespace memcg::runtime {

struct ContainerdContainer {
  std::string id, image;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string spec_type;  // the spec's Any type URL
  std::string spec;       // its value: the OCI runtime spec as JSON
};

inline constexpr size_t kMaxContainerdLabels = 256;
// The sandbox (pause) container: the CRI plugin's io.cri-containerd.kind
// label. It has no container name label; like the kubelet's cAdvisor labels
// (pkg/kubelet/server/server.go, containerPrometheusLabelsFunc), it is named
// after its kind.
inline constexpr const char* kContainerdKindLabel = "io.cri-containerd.kind";

// The record, or nullopt with `error` (an id that cannot be one, a spec that
// is not a bounded JSON object).
std::optional<ContainerRecord> containerd_record(const ContainerdContainer& c, std::string& error);

}  // namespace memcg::runtime
