// memory.stat and memory.events through the flat-keyed parser. Beyond "no
// crash": the layout cache must never change a result, so every input is
// parsed with a cache primed by the previous input (the collector's steady
// state: one kernel, one key order) and with a fresh one, and both must agree.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/parse/flat_keyed.h"
#include "base/parse/event_keys.h"
#include "base/parse/stat_keys.h"
#include "tests/fuzz/fuzz_check.h"

using namespace memcg::parse;

namespace {

template <size_t N>
void check(std::string_view text, const KeyTable& table, LayoutCache& primed) {
  FlatKeyed<N> a, b;
  LayoutCache fresh;
  const ParseResult ra = parse_flat_keyed(text, table, primed, a.out());
  const ParseResult rb = parse_flat_keyed(text, table, fresh, b.out());
  FUZZ_CHECK(ra.lines == rb.lines && ra.malformed == rb.malformed);
  FUZZ_CHECK(ra.malformed <= ra.lines);
  for (size_t k = 0; k < N; ++k) FUZZ_CHECK(a.get(k) == b.get(k));
  FUZZ_CHECK(a.unknown.size() == b.unknown.size());
  for (size_t i = 0; i < a.unknown.size(); ++i)
    FUZZ_CHECK(a.unknown[i].name == b.unknown[i].name && a.unknown[i].value == b.unknown[i].value);
  // Parsing again into the same storage gives the same values (keys absent
  // from the text must be cleared, not left over).
  const ParseResult rc = parse_flat_keyed(text, table, primed, a.out());
  FUZZ_CHECK(rc.malformed == ra.malformed);
  for (size_t k = 0; k < N; ++k) FUZZ_CHECK(a.get(k) == b.get(k));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static LayoutCache stat_layout, events_layout;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check<kStatKeyCount>(text, stat_key_table(), stat_layout);
  check<ev_count>(text, event_key_table(), events_layout);
  return 0;
}
