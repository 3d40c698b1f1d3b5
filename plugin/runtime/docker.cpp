// Docker: systemd driver "system.slice/docker-<id>.scope" (also inside a
// Kubernetes pod slice with dockershim), cgroupfs driver "docker/<id>".
#include "plugin/runtime/recognizers.h"

namespace memcg::runtime {

bool recognize_docker(const PathView& p, Identity& id) {
  if (!strip_id(p.leaf(), "docker-", ".scope", id.container_id) &&
      !(p.parent() == "docker" && strip_id(p.leaf(), "", "", id.container_id)))
    return false;
  id.runtime = "docker";
  return true;
}

}  // namespace memcg::runtime
