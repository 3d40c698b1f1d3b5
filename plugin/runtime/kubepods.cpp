// Kubernetes layouts. The systemd cgroup driver escapes the pod UID's dashes
// as underscores:
//   kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice/<container>
//   kubepods.slice/kubepods-pod<uid>.slice/<container>            (guaranteed)
// the cgroupfs driver keeps them:
//   kubepods/<qos>/pod<uid>/<container id>
//   kubepods/pod<uid>/<container id>                              (guaranteed)
// With cgroupfs the container directory is the bare id and does not say which
// CRI runtime made it: runtime "cri" (an OCI hook record can name it).
#include "plugin/runtime/recognizers.h"

namespace memcg::runtime {
namespace {

std::string_view qos_name(std::string_view s) {
  if (s == "burstable") return "burstable";
  if (s == "besteffort") return "besteffort";
  return {};
}

}  // namespace

void kubernetes_context(const PathView& p, Identity& id) {
  bool in_kubepods = false;
  for (size_t i = 0; i < p.parts.size(); ++i) {
    // "<pod slice>:cri-containerd:<id>" carries its pod slice before the first ':'.
    const std::string_view c = p.parts[i].substr(0, p.parts[i].find(':'));
    if (c == "kubepods.slice" || c == "kubepods") {
      in_kubepods = true;
      continue;
    }
    if (!in_kubepods) continue;
    if (c.starts_with("kubepods-") && c.ends_with(".slice")) {  // systemd driver
      std::string_view body = c.substr(9, c.size() - 15);      // between "kubepods-" and ".slice"
      for (std::string_view q : {"burstable", "besteffort"}) {
        if (body == q) id.qos_class = std::string(q);
        if (body.starts_with(q) && body.size() > q.size() && body[q.size()] == '-') {
          id.qos_class = std::string(q);
          body = body.substr(q.size() + 1);
        }
      }
      if (body.starts_with("pod")) {
        id.pod_uid = canonical_uuid(body.substr(3));
        if (id.qos_class.empty() && !id.pod_uid.empty()) id.qos_class = "guaranteed";
      }
    } else if (!qos_name(c).empty() && id.pod_uid.empty()) {  // cgroupfs driver
      id.qos_class = std::string(qos_name(c));
    } else if (c.starts_with("pod") && id.pod_uid.empty()) {
      id.pod_uid = canonical_uuid(c.substr(3));
      if (id.qos_class.empty() && !id.pod_uid.empty()) id.qos_class = "guaranteed";
    }
  }
}

bool recognize_kubepods_cgroupfs(const PathView& p, Identity& id) {
  if (id.pod_uid.empty() || !p.parent().starts_with("pod") || !strip_id(p.leaf(), "", "", id.container_id)) return false;
  id.runtime = "cri";
  return true;
}

}  // namespace memcg::runtime
