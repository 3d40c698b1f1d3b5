// The connection gate's view of HTTP/1.x requests (connection_gate.h): where
// a request ends, whether it is acceptable, and where its method, target and
// fields are, so that a worker builds the Request (request.h) from the same
// parse. The one HTTP parser of the server; pure functions over bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memcg::exporter {

// Where a part of the head is: an offset from the request line's start.
struct Span {
  uint32_t off = 0, len = 0;
  std::string_view of(std::string_view head) const noexcept { return head.substr(off, len); }
};

struct RequestHead {
  size_t skipped = 0;     // empty lines before the request line (RFC 9112 2.2 allows them)
  size_t head_len = 0;    // from the request line to the blank line, inclusive
  size_t body_len = 0;    // Content-Length
  bool keep_alive = false;  // the client wants the connection after the response
  bool is_head = false;     // HEAD: the response carries no body
  Span method, target;
  std::vector<std::pair<Span, Span>> fields;  // name, value (without surrounding whitespace)
  size_t total() const noexcept { return skipped + head_len + body_len; }
};

struct HeadCheck {
  enum class Status { incomplete, ok, refused } status = Status::incomplete;
  RequestHead head;
  int code = 0;        // refused: the status the gate answers with
  std::string reason;  // refused: why, for the body
};

// Examines what a client sent so far. Refused, with the status to answer
// (a reason that never quotes the request): a request line that is not
// METHOD SP TARGET SP HTTP/1.x (400; another HTTP version 505), a field
// line without a token name and its colon (400),
// a head longer than `max_head` (431), a line starting with SP or HT
// (obs-fold, RFC 9112 5.2: 400), ambiguous framing (http_framing.h: 400),
// Transfer-Encoding (the gate needs a length: 411), a body over `max_body` (413).
HeadCheck check_request(std::string_view in, size_t max_head, size_t max_body);

// A complete response from the gate itself (refusals): plain text, closes.
std::string gate_response(int code, std::string_view reason);

}  // namespace memcg::exporter
