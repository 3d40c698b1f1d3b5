// memory.current, memory.max and friends: accepted input round-trips.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/parse/single_value.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto v = memcg::parse::parse_single_value(text);
  if (v) {
    const std::string again = v->unlimited ? "max\n" : std::to_string(v->value) + "\n";
    FUZZ_CHECK(memcg::parse::parse_single_value(again) == v);
  }
  return 0;
}
