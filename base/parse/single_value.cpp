#include "base/parse/single_value.h"

#include "base/parse/number.h"

namespace memcg::parse {

std::optional<SingleValue> parse_single_value(std::string_view text) noexcept {
  // memory.current is parsed for every cgroup every pass: the checks are
  // written for a short digit string ending in '\n' ("max" is the limits').
  size_t n = text.size();
  if (n > 0 && text[n - 1] == '\n') --n;
  if (n == 3 && text[0] == 'm' && text[1] == 'a' && text[2] == 'x') return SingleValue{0, true};
  const auto v = parse_u64(text.substr(0, n));
  if (!v) return std::nullopt;
  return SingleValue{*v, false};
}

}  // namespace memcg::parse
