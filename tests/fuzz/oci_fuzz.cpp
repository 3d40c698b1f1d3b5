// The OCI hook's input: the state JSON (stdin) and the bundle's config.json.
// The first byte picks which one the rest is; both paths then require that a
// record we would write reads back unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "plugin/runtime/oci_record.h"
#include "tests/fuzz/fuzz_check.h"

using namespace memcg::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string error;
  std::optional<ContainerRecord> rec;
  switch (data[0] % 3) {
    case 0:
      if (auto st = parse_oci_state(text, error)) {
        FUZZ_CHECK(valid_container_id(st->id));
        rec = st->annotations;
        rec->id = st->id;
      }
      break;
    case 1: {
      OciState st;
      st.id = "0123456789abcdef";
      st.bundle = "/run/bundle";
      rec = record_from_config(st, text, error);
      break;
    }
    default:
      rec = parse_record(text, error);
      break;
  }
  if (rec && valid_container_id(rec->id)) {
    const std::string rendered = render_record(*rec);
    std::string error2;
    const auto back = parse_record(rendered, error2);
    FUZZ_CHECK(back.has_value());
    FUZZ_CHECK(*back == *rec);
  }
  return 0;
}
