// Who holds the web server's connections, and who is served next: the pure
// bookkeeping of the connection gate (connection_gate.h), kept apart from its
// sockets so the policy is tested without any.
//
//   admit    a new connection: refused when the client (an IPv4 address, an
//            IPv6 /64) already holds its limit of open connections, or the
//            gate max_total (the gate then evicts a connection of the
//            biggest client instead, if it can); open connections cost a
//            descriptor, no worker. The per-client limit is at most an
//            eighth of max_total, so a small fd limit that lowers the total
//            never lets one client hold all of it.
//   ready    a connection's request has arrived whole: it waits for a worker.
//   next     which ready request gets the worker that is free: clients in
//            turn (round robin), none holding more than half the workers,
//            and the last free worker only for a client holding none, so one
//            client's flood of complete requests cannot keep another's
//            scrape waiting behind all of it.
//   finish   the worker answered (the connection may be closed by then).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace memcg::exporter {

// A client as limits see it: an IPv4 address (IPv4-mapped IPv6 included), or
// the /64 of an IPv6 address (one host usually owns a whole /64).
struct ClientKey {
  std::array<unsigned char, 9> bytes{};  // family tag + 4 or 8 address bytes
  auto operator<=>(const ClientKey&) const = default;
  std::string str() const;
};
ClientKey client_key(const sockaddr_storage& addr) noexcept;

enum class Refusal { none, per_client, total };

class ClientTable {
 public:
  ClientTable(size_t max_total, size_t max_per_client, size_t workers) noexcept
      : max_total_(max_total), max_per_client_(per_client_limit(max_total, max_per_client)), workers_(workers),
        share_(workers > 1 ? workers / 2 : 1) {}

  // The per-client limit in force: the configured one, at most max_total / 8.
  static size_t per_client_limit(size_t max_total, size_t configured) noexcept;

  // A new connection `id` from `key`: none, or why it is refused.
  Refusal admit(const ClientKey& key) noexcept;
  // Its request head is complete: it may be given a worker.
  void ready(const ClientKey& key, uint64_t id);
  // The next ready connection to serve, if a worker is free and a client with
  // ready connections is under its share and `may` lets it start (the
  // memory budget, response_budget.h); it then counts as served.
  std::optional<uint64_t> next(const std::function<bool(const ClientKey&)>& may = {});
  // A ready request of connection `id` leaves its queue without a worker.
  void cancel(const ClientKey& key, uint64_t id) noexcept;
  // The worker next() gave a request of `key`'s is free again.
  void finish(const ClientKey& key) noexcept;
  // Connection `id` closes (leaving its ready queue if it waited there). A
  // request of it at a worker still counts until finish(): a client that
  // closes as soon as it has asked cannot have more handlers running than
  // its share.
  void release(const ClientKey& key, uint64_t id) noexcept;

  size_t open() const noexcept { return open_; }
  size_t open_of(const ClientKey& key) const noexcept;
  size_t per_client() const noexcept { return max_per_client_; }
  size_t served() const noexcept { return served_; }
  size_t share() const noexcept { return share_; }

 private:
  struct Client {
    size_t open = 0, served = 0;
    std::deque<uint64_t> ready;
  };
  size_t max_total_, max_per_client_, workers_, share_;
  size_t open_ = 0, served_ = 0;
  std::map<ClientKey, Client> clients_;
  ClientKey cursor_{};  // round robin: the last client served
};

}  // namespace memcg::exporter
