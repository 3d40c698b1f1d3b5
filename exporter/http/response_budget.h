// What responses on their way to clients hold, and whether another request
// may be answered now: the connection gate's memory budget
// (connection_gate.h), pure bookkeeping tested without sockets.
//
// A connection being written a response holds its body (shared: the
// /metrics body of one snapshot is one allocation however many clients it
// goes to), its head, and up to `kernel_share` bytes in the kernel's send
// buffer (the gate bounds SO_SNDBUF). held() counts each body once; a
// client's own figure counts every body of its connections whole, so a
// client cannot spread the cost over bodies others share.
//
//   may_start  a client holding nothing is always served (one response at
//              a time: Prometheus is never starved by a neighbour's
//              backlog); one holding something only while it is under its
//              share (total / clients holding) and the total under budget.
//              Otherwise its request waits, and is refused with 503 at
//              web.request_timeout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

#include "exporter/http/client_table.h"

namespace memcg::exporter {

class ResponseBudget {
 public:
  ResponseBudget(size_t total, size_t kernel_share) noexcept : total_(total), kernel_share_(kernel_share) {}

  // Connection `id` of `key` is being written `body` (null: none) and
  // `other` bytes besides (its head, a refusal); replaces what it held.
  void hold(uint64_t id, const ClientKey& key, const std::string* body, size_t other);
  // Connection `id` holds nothing any more (written out, or closed).
  void release(uint64_t id) noexcept;

  bool may_start(const ClientKey& key) const noexcept;

  size_t held() const noexcept { return bodies_total_ + other_total_; }
  size_t held_by(const ClientKey& key) const noexcept;
  size_t share() const noexcept;  // per holding client
  size_t total() const noexcept { return total_; }

 private:
  struct Holding {
    ClientKey key;
    const std::string* body = nullptr;
    size_t body_size = 0, other = 0;
  };
  struct Body {
    size_t size = 0, refs = 0;
  };
  size_t total_, kernel_share_;
  std::unordered_map<uint64_t, Holding> by_conn_;
  std::unordered_map<const std::string*, Body> bodies_;
  std::map<ClientKey, size_t> by_client_;
  size_t bodies_total_ = 0, other_total_ = 0;
};

}  // namespace memcg::exporter
