// CRI-O: "crio-<id>.scope" (systemd driver), "crio-<id>" (cgroupfs driver),
// "<slice>:crio:<id>". "crio-conmon-<id>.scope" is the container's monitor
// process, not the container: it is left to the systemd recogniser.
#include "plugin/runtime/recognizers.h"

namespace memcg::runtime {

bool recognize_crio(const PathView& p, Identity& id) {
  const std::string_view leaf = p.leaf();
  const size_t colon = leaf.rfind(":crio:");
  if (!strip_id(leaf, "crio-", ".scope", id.container_id) && !strip_id(leaf, "crio-", "", id.container_id) &&
      !(colon != std::string_view::npos && strip_id(leaf.substr(colon + 6), "", "", id.container_id)))
    return false;
  id.runtime = "cri-o";
  return true;
}

}  // namespace memcg::runtime
