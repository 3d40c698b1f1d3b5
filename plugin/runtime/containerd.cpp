// containerd (CRI): systemd driver "...pod<uid>.slice/cri-containerd-<id>.scope";
// a systemd-style cgroupsPath applied without systemd leaves the literal name
// "<slice>:cri-containerd:<id>".
#include "plugin/runtime/recognizers.h"

namespace memcg::runtime {

bool recognize_containerd(const PathView& p, Identity& id) {
  const std::string_view leaf = p.leaf();
  const size_t colon = leaf.rfind(":cri-containerd:");
  if (!strip_id(leaf, "cri-containerd-", ".scope", id.container_id) &&
      !(colon != std::string_view::npos && strip_id(leaf.substr(colon + 16), "", "", id.container_id)))
    return false;
  id.runtime = "containerd";
  return true;
}

}  // namespace memcg::runtime
