// containerd. CRI, systemd driver: "...pod<uid>.slice/cri-containerd-<id>.scope";
// a systemd-style cgroupsPath applied without systemd leaves the literal name
// "<slice>:cri-containerd:<id>". ctr (and nerdctl with the cgroupfs manager)
// put a container at "/<namespace>/<id>" below the root; recognised for the
// namespace both use by default, "default", with the id any containerd
// identifier (ctr takes a name: "web", not only hex).
#include "plugin/runtime/recognizers.h"

namespace memcg::runtime {
namespace {

// containerd's identifier rule: alphanumeric runs joined by single '.', '_'
// or '-', at most 76 characters.
bool is_containerd_identifier(std::string_view s) noexcept {
  if (s.empty() || s.size() > 76) return false;
  bool after_separator = true;
  for (char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) {
      after_separator = false;
    } else if ((c == '.' || c == '_' || c == '-') && !after_separator) {
      after_separator = true;
    } else {
      return false;
    }
  }
  return !after_separator;
}

}  // namespace

bool recognize_containerd(const PathView& p, Identity& id) {
  const std::string_view leaf = p.leaf();
  const size_t colon = leaf.rfind(":cri-containerd:");
  if (strip_id(leaf, "cri-containerd-", ".scope", id.container_id) ||
      (colon != std::string_view::npos && strip_id(leaf.substr(colon + 16), "", "", id.container_id))) {
    id.runtime = "containerd";
    return true;
  }
  if (p.parts.size() == 2 && p.parts[0] == "default" && is_containerd_identifier(leaf)) {
    id.runtime = "containerd";
    id.container_id = std::string(leaf);
    return true;
  }
  return false;
}

}  // namespace memcg::runtime
