// The Docker Engine API (and podman's compatible one) as far as naming a
// container needs: GET /containers/<id>/json over HTTP/1.1 on a Unix socket.
// Pure functions: the request's bytes, the reply's framing, the inspect
// document. Replies are hostile input (a compromised or buggy engine): sizes,
// nesting and values are bounded, and nothing here throws.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "plugin/runtime/oci_record.h"

namespace memcg::runtime {

inline constexpr size_t kMaxEngineReplyBytes = 1024 * 1024;  // an inspect document is ~10 KB
inline constexpr size_t kMaxImageBytes = 512;                // registry/repo:tag@sha256:...

// The request for `id` (a container id: 12-64 lowercase hex, checked by the
// caller). "Connection: close" so the reply ends at EOF.
std::string engine_inspect_request(std::string_view id);

struct HttpReply {
  int status = 0;
  std::string body;
};

// An HTTP/1.x reply: status line, headers, and the body framed by
// Transfer-Encoding: chunked, Content-Length, or the end of the stream.
// `eof`: whether `raw` is all there will be. nullopt with `error` empty means
// "not complete yet, read more" (only when !eof); with `error` set, the reply
// is broken.
std::optional<HttpReply> parse_http_reply(std::string_view raw, bool eof, std::string& error);

// What an inspect document names: Name (without the leading '/'), Config.Image,
// and Kubernetes labels (cri-dockerd) for name, pod, namespace and pod UID.
// The record's id is the document's Id, which must equal `id` (an engine
// answering for another container is not believed).
std::optional<ContainerRecord> parse_inspect(std::string_view json, std::string_view id, std::string& error);

}  // namespace memcg::runtime
