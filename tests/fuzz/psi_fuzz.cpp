// memory.pressure: no crash, and what is accepted is plausible (a kernel
// never prints negative or non-finite averages; we must not pass them on).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/parse/psi.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  memcg::parse::Psi psi;
  memcg::parse::parse_psi(text, psi);
  for (const auto* line : {&psi.some, &psi.full})
    for (double v : {line->avg10, line->avg60, line->avg300}) FUZZ_CHECK(std::isfinite(v) && v >= 0);
  return 0;
}
