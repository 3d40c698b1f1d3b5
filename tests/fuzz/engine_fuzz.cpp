// Engine API replies: the HTTP framing (as bytes arrive and at EOF) and the
// inspect document. A reply complete before EOF must read the same at EOF;
// an inspect record must carry only bounded, printable values.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "plugin/runtime/engine_api.h"
#include "tests/fuzz/fuzz_check.h"

using namespace memcg::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto early = parse_http_reply(raw, false, error);
  auto at_eof = parse_http_reply(raw, true, error);
  if (early) {
    FUZZ_CHECK(at_eof.has_value());
    FUZZ_CHECK(early->status == at_eof->status && early->body == at_eof->body);
  }
  const std::string id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  for (std::string_view body : {raw, at_eof ? std::string_view(at_eof->body) : std::string_view()}) {
    if (auto r = parse_inspect(body, id, error)) {
      FUZZ_CHECK(r->id == id);
      FUZZ_CHECK(r->name.size() <= kMaxValueBytes && r->image.size() <= kMaxImageBytes);
      for (const std::string* v : {&r->name, &r->image, &r->pod, &r->namespace_})
        for (char c : *v) FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
    }
  }
  return 0;
}
