#include "exporter/http/client_table.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace memcg::exporter {

ClientKey client_key(const sockaddr_storage& addr) noexcept {
  ClientKey k;
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    k.bytes[0] = 4;
    std::memcpy(&k.bytes[1], &a.sin_addr, 4);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {
      k.bytes[0] = 4;
      std::memcpy(&k.bytes[1], &a.sin6_addr.s6_addr[12], 4);
    } else {
      k.bytes[0] = 6;
      std::memcpy(&k.bytes[1], &a.sin6_addr, 8);  // the /64
    }
  }
  return k;
}

std::string ClientKey::str() const {
  char buf[INET6_ADDRSTRLEN + 4] = "?";
  if (bytes[0] == 4) {
    ::inet_ntop(AF_INET, &bytes[1], buf, sizeof buf);
  } else if (bytes[0] == 6) {
    unsigned char a[16]{};
    std::memcpy(a, &bytes[1], 8);
    ::inet_ntop(AF_INET6, a, buf, sizeof buf);
    return std::string(buf) + "/64";
  }
  return buf;
}

size_t ClientTable::per_client_limit(size_t max_total, size_t configured) noexcept {
  return std::max<size_t>(1, std::min(configured, max_total / 8));
}

size_t ClientTable::open_of(const ClientKey& key) const noexcept {
  const auto it = clients_.find(key);
  return it == clients_.end() ? 0 : it->second.open;
}

void ClientTable::cancel(const ClientKey& key, uint64_t id) noexcept {
  auto it = clients_.find(key);
  if (it == clients_.end()) return;
  auto& q = it->second.ready;
  if (auto r = std::find(q.begin(), q.end(), id); r != q.end()) q.erase(r);
}

void ClientTable::finish(const ClientKey& key) noexcept {
  auto it = clients_.find(key);
  if (it == clients_.end() || it->second.served == 0) return;
  --it->second.served;
  --served_;
  if (it->second.open == 0 && it->second.served == 0) clients_.erase(it);
}

Refusal ClientTable::admit(const ClientKey& key) noexcept {
  if (open_ >= max_total_) return Refusal::total;
  Client& c = clients_[key];
  if (c.open >= max_per_client_) return Refusal::per_client;
  ++c.open;
  ++open_;
  return Refusal::none;
}

void ClientTable::ready(const ClientKey& key, uint64_t id) { clients_[key].ready.push_back(id); }

std::optional<uint64_t> ClientTable::next(const std::function<bool(const ClientKey&)>& may) {
  if (served_ >= workers_ || clients_.empty()) return std::nullopt;
  // Clients after the cursor first, then from the start up to it.
  auto pick = [&](auto from, auto to) -> std::optional<uint64_t> {
    for (auto it = from; it != to; ++it) {
      Client& c = it->second;
      if (c.ready.empty() || c.served >= share_) continue;
      if (c.served > 0 && workers_ - served_ <= 1) continue;  // the last worker is for clients holding none
      if (may && !may(it->first)) continue;
      const uint64_t id = c.ready.front();
      c.ready.pop_front();
      ++c.served;
      ++served_;
      cursor_ = it->first;
      return id;
    }
    return std::nullopt;
  };
  const auto after = clients_.upper_bound(cursor_);
  if (auto id = pick(after, clients_.end())) return id;
  return pick(clients_.begin(), after);
}

void ClientTable::release(const ClientKey& key, uint64_t id) noexcept {
  auto it = clients_.find(key);
  if (it == clients_.end()) return;
  Client& c = it->second;
  if (auto r = std::find(c.ready.begin(), c.ready.end(), id); r != c.ready.end()) c.ready.erase(r);
  --c.open;
  --open_;
  // Bounded by max_total and the workers: no client is remembered once gone.
  if (c.open == 0 && c.served == 0) clients_.erase(it);
}

}  // namespace memcg::exporter
