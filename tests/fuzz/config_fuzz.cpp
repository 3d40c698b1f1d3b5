// The TOML loader: any input either loads or throws ConfigError (which the
// daemon turns into file:line:col and exit 78, or keeps the old config on
// reload). Any other exception escapes and libFuzzer reports it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto cfg = memcg::config::load_string(text, "fuzz.toml", {4096, 2});
    (void)memcg::config::describe(cfg);
  } catch (const memcg::config::ConfigError&) {
  }
  return 0;
}
