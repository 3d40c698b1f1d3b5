#include "base/parse/cgroup_stat.h"

#include "base/parse/number.h"

namespace memcg::parse {

std::optional<uint64_t> parse_nr_descendants(std::string_view text) noexcept {
  constexpr std::string_view kKey = "nr_descendants ";
  std::optional<uint64_t> found;
  std::string_view line;
  while (next_line(text, line)) {
    if (!line.starts_with(kKey)) continue;
    auto v = parse_u64(line.substr(kKey.size()));
    if (!v || found) return std::nullopt;  // a count we cannot trust is no count
    found = v;
  }
  return found;
}

bool lists_controller(std::string_view text, std::string_view name) noexcept {
  while (!text.empty()) {
    const size_t end = text.find_first_of(" \n");
    if (text.substr(0, end) == name) return true;
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return false;
}

}  // namespace memcg::parse
