#include "base/parse/flat_keyed.h"

#include <algorithm>

#include "base/parse/digits.h"
#include "base/parse/number.h"
#include "base/text/short_bytes.h"

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

// The steady state: the next line holds the key the same line held last
// time. Checks the key and parses the value in one scan instead of
// splitting the line first (two searches and a comparison per line); a line
// that is not exactly "key digits\n" with fewer than 20 digits is left to
// the general path, which decides what it is. The bytes consumed, or 0.
size_t expected_line(std::string_view rest, std::string_view key, uint64_t& value) noexcept {
  const size_t k = key.size();
  if (rest.size() < k + 2 || rest[k] != ' ' || !text::same_bytes(rest.data(), key.data(), k)) return 0;
  const size_t start = k + 1;
  const DigitRun run = digit_run(rest.data() + start, rest.size() - start);
  const size_t i = start + run.len;
  if (run.len == 0 || (i < rest.size() && rest[i] != '\n')) return 0;
  value = run.value;
  return i < rest.size() ? i + 1 : i;
}

// A parsed line's value into its slot (a known key) or the unknown keys:
// false for a duplicate. The known slot inline (every line of a re-read),
// the unknown keys' search out of line: together they were 29 % of a
// re-read's parse, 12 points of it saving and restoring registers for the
// search a known key never reaches (callgrind, a captured 6.12 file).
[[gnu::noinline]] bool store_unknown_key(FlatKeyedOut& out, size_t& unknown_used, std::string_view key, uint64_t value) {
  return store_unknown(out.unknown, unknown_used, key, value);
}

inline bool store(FlatKeyedOut& out, size_t& unknown_used, uint16_t idx, std::string_view key, uint64_t value) {
  if (idx != LayoutCache::kUnknown && idx < out.values.size()) {
    if (out.present[idx]) return false;  // idx < values.size() <= kMaxKeys: in range
    out.values[idx] = value;
    out.present[idx] = true;
    return true;
  }
  return store_unknown_key(out, unknown_used, key, value);
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
  // The layout's keys held locally: stores into `out` could alias the
  // vector's own fields for all the compiler knows, and reloading its size
  // every line cost more than storing the value. Only the general path
  // below grows it.
  const uint16_t* keys = layout.line_key.data();
  size_t known = layout.line_key.size();
  while (!rest.empty()) {
    const uint16_t expected = line_no < known ? keys[line_no] : LayoutCache::kUnknown;
    uint64_t value = 0;
    if (expected != LayoutCache::kUnknown) {
      const std::string_view key = table.name(expected);
      if (const size_t used = expected_line(rest, key, value)) {
        rest.remove_prefix(used);
        ++res.lines;
        ++line_no;
        if (!store(out, unknown_used, expected, key, value)) ++res.malformed;
        continue;
      }
    }
    next_line(rest, line);
    if (line.empty()) continue;
    ++res.lines;
    const size_t sp = line.find(' ');
    const auto parsed = sp == std::string_view::npos || sp == 0 ? std::nullopt : parse_u64(line.substr(sp + 1));
    if (!parsed) {
      ++res.malformed;
      continue;
    }
    const std::string_view key = line.substr(0, sp);
    uint16_t idx = LayoutCache::kUnknown;
    if (expected != LayoutCache::kUnknown && table.name(expected) == key) idx = expected;
    else if (auto found = table.find(key)) idx = *found;
    if (line_no >= layout.line_key.size()) layout.line_key.resize(line_no + 1, LayoutCache::kUnknown);
    layout.line_key[line_no] = idx;
    keys = layout.line_key.data();
    known = layout.line_key.size();
    ++line_no;
    if (!store(out, unknown_used, idx, key, *parsed)) ++res.malformed;
  }
  out.unknown.resize(unknown_used);  // shrinking never allocates
  return res;
}

}  // namespace memcg::parse
