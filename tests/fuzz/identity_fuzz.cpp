// Path -> identity recognisers: no crash, and what they extract is well-formed
// (ids usable as label values and record file names, canonical pod UIDs).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "plugin/runtime/identity.h"
#include "plugin/runtime/oci_record.h"
#include "tests/fuzz/fuzz_check.h"

using namespace memcg::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view path(reinterpret_cast<const char*>(data), size);
  const Identity id = identify(path);
  if (!id.container_id.empty()) FUZZ_CHECK(id.container_id.size() <= 255);
  if (!id.pod_uid.empty()) FUZZ_CHECK(canonical_uuid(id.pod_uid) == id.pod_uid);
  FUZZ_CHECK(id.qos_class.empty() || id.qos_class == "guaranteed" || id.qos_class == "burstable" ||
             id.qos_class == "besteffort");
  (void)unescape_unit(path);
  return 0;
}
