// What a cgroup is, as far as its path tells: which runtime made it, the
// container id, the Kubernetes pod and QoS class, the systemd unit. Computed
// once per cgroup at discovery from the path alone (no runtime API).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memcg::runtime {

struct Identity {
  std::string runtime;       // docker, containerd, cri-o, cri, podman, systemd-nspawn, systemd, raw
  std::string container_id;  // full id as the runtime names it (nspawn: the machine name)
  std::string pod_uid;       // canonical dashed lowercase UUID
  std::string qos_class;     // guaranteed, burstable, besteffort
  std::string unit;          // systemd unit of the last path component, unescaped
  bool operator==(const Identity&) const = default;
};

// Identity of a cgroup path relative to the cgroup2 root ("/" is the root).
Identity identify(std::string_view path);

// systemd unit-name unescaping: "\x2d" -> "-" (systemd.unit(5), "String Escaping").
std::string unescape_unit(std::string_view s);

// "0d3c6a1e_5b7f_..." or "0D3C6A1E-5B7F-..." -> "0d3c6a1e-5b7f-..."; empty if not a UUID.
std::string canonical_uuid(std::string_view s);

// Lowercase hex of 12..64 digits: what docker, containerd, CRI-O and podman use as ids.
bool is_container_id(std::string_view s) noexcept;

}  // namespace memcg::runtime
