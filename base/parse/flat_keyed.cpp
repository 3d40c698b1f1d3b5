#include "base/parse/flat_keyed.h"

#include <algorithm>

#include "base/parse/number.h"

namespace memcg::parse {
namespace {

// Reuses an existing slot with the same name (the steady-state path), so a
// file whose unknown keys do not change allocates nothing on re-read.
bool store_unknown(std::vector<UnknownKey>& unknown, size_t& used, std::string_view name, uint64_t value) {
  for (size_t i = 0; i < used; ++i)
    if (unknown[i].name == name) return false;  // duplicate within this read
  auto it = std::find_if(unknown.begin() + static_cast<std::ptrdiff_t>(used), unknown.end(),
                         [&](const UnknownKey& u) { return u.name == name; });
  if (it == unknown.end()) {
    unknown.push_back(UnknownKey{std::string(name), value});
    it = unknown.end() - 1;
  } else {
    it->value = value;
  }
  std::iter_swap(unknown.begin() + static_cast<std::ptrdiff_t>(used), it);
  ++used;
  return true;
}

}  // namespace

ParseResult parse_flat_keyed(std::string_view text, const KeyTable& table, LayoutCache& layout,
                             FlatKeyedOut out) {
  ParseResult res;
  out.present.reset();
  size_t unknown_used = 0;
  size_t line_no = 0;
  std::string_view rest = text;
  std::string_view line;
  while (next_line(rest, line)) {
    if (line.empty()) continue;
    ++res.lines;
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0) {
      ++res.malformed;
      continue;
    }
    const std::string_view key = line.substr(0, sp);
    const auto value = parse_u64(line.substr(sp + 1));
    if (!value) {
      ++res.malformed;
      continue;
    }

    uint16_t idx = LayoutCache::kUnknown;
    if (line_no < layout.line_key.size() && layout.line_key[line_no] != LayoutCache::kUnknown &&
        table.name(layout.line_key[line_no]) == key) {
      idx = layout.line_key[line_no];
    } else if (auto found = table.find(key)) {
      idx = *found;
    }
    if (line_no >= layout.line_key.size()) layout.line_key.resize(line_no + 1, LayoutCache::kUnknown);
    layout.line_key[line_no] = idx;
    ++line_no;

    if (idx != LayoutCache::kUnknown && idx < out.values.size()) {
      if (out.present.test(idx)) {
        ++res.malformed;
        continue;
      }
      out.values[idx] = *value;
      out.present.set(idx);
    } else if (!store_unknown(out.unknown, unknown_used, key, *value)) {
      ++res.malformed;
    }
  }
  out.unknown.resize(unknown_used);  // shrinking never allocates
  return res;
}

}  // namespace memcg::parse
