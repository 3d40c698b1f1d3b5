// systemd-nspawn: "machine.slice/machine-<escaped name>.scope" (registered with
// systemd-machined; libvirt guests share this layout) and
// "machine.slice/systemd-nspawn@<name>.service/payload". The machine name is
// the container id.
#include "plugin/runtime/recognizers.h"

namespace memcg::runtime {

bool recognize_nspawn(const PathView& p, Identity& id) {
  const std::string_view leaf = p.leaf(), parent = p.parent();
  std::string_view name;
  if (parent == "machine.slice" && leaf.starts_with("machine-") && leaf.ends_with(".scope") && leaf.size() > 14) {
    name = leaf.substr(8, leaf.size() - 14);
  } else if (leaf == "payload" && parent.starts_with("systemd-nspawn@") && parent.ends_with(".service") &&
             parent.size() > 23) {
    name = parent.substr(15, parent.size() - 23);
  } else {
    return false;
  }
  // systemd-machined accepts host-name-like machine names only (up to 64 of
  // [A-Za-z0-9._-]); anything else here is not a machine it registered.
  std::string machine = unescape_unit(name);
  if (machine.empty() || machine.size() > 64) return false;
  for (char c : machine)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return false;
  id.runtime = "systemd-nspawn";
  id.container_id = std::move(machine);
  return true;
}

}  // namespace memcg::runtime
