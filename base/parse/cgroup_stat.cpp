#include "base/parse/cgroup_stat.h"

#include "base/parse/number.h"

namespace memcg::parse {

namespace {

// The value of the one line "KEY N" (`key` with its space), or nullopt.
std::optional<uint64_t> counted_line(std::string_view text, std::string_view kKey) noexcept {
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

}  // namespace

std::optional<uint64_t> parse_nr_descendants(std::string_view text) noexcept {
  return counted_line(text, "nr_descendants ");
}

std::optional<bool> parse_populated(std::string_view text) noexcept {
  const auto v = counted_line(text, "populated ");
  if (!v || *v > 1) return std::nullopt;
  return *v == 1;
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
