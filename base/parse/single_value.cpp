#include "base/parse/single_value.h"

#include "base/parse/number.h"

namespace memcg::parse {

std::optional<SingleValue> parse_single_value(std::string_view text) noexcept {
  if (text.ends_with('\n')) text.remove_suffix(1);
  if (text == "max") return SingleValue{0, true};
  auto v = parse_u64(text);
  if (!v) return std::nullopt;
  return SingleValue{*v, false};
}

}  // namespace memcg::parse
