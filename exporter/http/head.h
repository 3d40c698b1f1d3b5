// The connection gate's view of HTTP/1.x messages (connection_gate.h): where
// a request ends, so that the gate can hand one request at a time to a
// worker and find the next one itself; the head it relays to CivetWeb (one
// request per upstream connection: "Connection: close"); where the response
// head ends and whether its body is delimited; and the head it relays back
// (the client's own keep-alive). Pure functions over bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace memcg::exporter {

struct RequestHead {
  size_t skipped = 0;     // empty lines before the request line (RFC 9112 2.2 allows them)
  size_t head_len = 0;    // from the request line to the blank line, inclusive
  size_t body_len = 0;    // Content-Length
  bool keep_alive = false;  // the client wants the connection after the response
  bool is_head = false;     // HEAD: the response carries no body
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

// The head relayed upstream: the client's with every Connection, Keep-Alive,
// Proxy-Connection and Expect field dropped and "Connection: close" added.
std::string upstream_head(std::string_view head);

struct ResponseHead {
  size_t head_len = 0;     // status line to blank line, inclusive
  bool delimited = false;  // its end is known without closing: Content-Length, chunked, or no body
  int status = 0;
};
// The response head at the start of `buf`, once complete (head_len 0 before).
ResponseHead find_response_head(std::string_view buf, bool request_was_head);

// `head` with its Connection fields replaced by the client's own:
// "Connection: keep-alive" or "Connection: close".
std::string client_head(std::string_view head, bool keep_alive);

// A complete response from the gate itself (refusals): plain text, closes.
std::string gate_response(int code, std::string_view reason);

}  // namespace memcg::exporter
