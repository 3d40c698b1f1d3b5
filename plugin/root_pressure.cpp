#include "plugin/root_pressure.h"

#include <fcntl.h>

#include "base/parse/psi.h"
#include "plugin/cgroupfs/kept_file.h"

namespace memcg {

std::optional<uint64_t> RootPressure::some_total_us(uint64_t& reads) {
  if (!fd_.valid()) {
    if (tried_) return std::nullopt;
    tried_ = true;
    auto fd = cgroupfs::open_at(AT_FDCWD, path_.c_str());
    if (!fd.ok()) return std::nullopt;
    fd_ = std::move(fd).value();
  }
  ++reads;
  const auto text = cgroupfs::read_kept(io_, fd_.get(), buf_);
  if (!text.ok()) {
    fd_.reset();  // opened again at the next rescan
    return std::nullopt;
  }
  parse::Psi psi;
  // A line it cannot read: no gate this pass (every cgroup is read).
  if (parse::parse_psi(text.value(), psi) != 0 || !psi.some.present) return std::nullopt;
  return psi.some.total_us;
}

}  // namespace memcg
