// Any other systemd unit (service, scope, slice): runtime "systemd" with the
// unit name, unescaped. Everything else is "raw".
#include "plugin/runtime/recognizers.h"

namespace memcg::runtime {

bool recognize_systemd_unit(const PathView&, Identity& id) {
  if (id.unit.empty()) return false;
  id.runtime = "systemd";
  return true;
}

}  // namespace memcg::runtime
