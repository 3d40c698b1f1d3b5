// Podman: "machine.slice/libpod-<id>.scope" (rootful) or the same under a user's
// systemd instance (rootless); "<unit>.service/libpod-payload-<id>" when the
// container runs inside a systemd service (--cgroups=split, quadlet);
// "libpod_parent/libpod-<id>" with the cgroupfs manager.
// "libpod-conmon-<id>.scope" is the monitor, not the container.
#include "plugin/runtime/recognizers.h"

namespace memcg::runtime {

bool recognize_podman(const PathView& p, Identity& id) {
  const std::string_view leaf = p.leaf();
  if (!strip_id(leaf, "libpod-", ".scope", id.container_id) && !strip_id(leaf, "libpod-payload-", "", id.container_id) &&
      !(p.parent() == "libpod_parent" && strip_id(leaf, "libpod-", "", id.container_id)))
    return false;
  id.runtime = "podman";
  return true;
}

}  // namespace memcg::runtime
