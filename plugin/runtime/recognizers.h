// The chain of recognisers behind identify(): each looks at the last path
// component (with its parents for context) and either claims the cgroup or
// passes. First claim wins; systemd and raw come last.
#pragma once

#include <span>
#include <string_view>

#include "plugin/runtime/identity.h"

namespace memcg::runtime {

struct PathView {
  std::span<const std::string_view> parts;  // path components, root first
  std::string_view leaf() const { return parts.back(); }
  std::string_view parent() const { return parts.size() > 1 ? parts[parts.size() - 2] : std::string_view{}; }
};

using Recognizer = bool (*)(const PathView&, Identity&);

bool recognize_docker(const PathView& p, Identity& id);
bool recognize_containerd(const PathView& p, Identity& id);
bool recognize_crio(const PathView& p, Identity& id);
bool recognize_podman(const PathView& p, Identity& id);
bool recognize_nspawn(const PathView& p, Identity& id);
bool recognize_kubepods_cgroupfs(const PathView& p, Identity& id);
bool recognize_systemd_unit(const PathView& p, Identity& id);

// Kubernetes context from any ancestor: pod UID and QoS class (both drivers).
void kubernetes_context(const PathView& p, Identity& id);

// "<prefix><id><suffix>" -> id when it is a container id.
bool strip_id(std::string_view s, std::string_view prefix, std::string_view suffix, std::string& out);

}  // namespace memcg::runtime
