#include "exporter/http/response_budget.h"

#include <algorithm>

namespace memcg::exporter {

void ResponseBudget::hold(uint64_t id, const ClientKey& key, const std::string* body, size_t other) {
  release(id);
  Holding h{key, body, body ? body->size() : 0, other + kernel_share_};
  if (body) {
    Body& b = bodies_[body];
    if (b.refs++ == 0) {
      b.size = h.body_size;
      bodies_total_ += b.size;
    }
  }
  other_total_ += h.other;
  by_client_[key] += h.body_size + h.other;
  by_conn_.emplace(id, h);
}

void ResponseBudget::release(uint64_t id) noexcept {
  const auto it = by_conn_.find(id);
  if (it == by_conn_.end()) return;
  const Holding& h = it->second;
  if (h.body) {
    const auto b = bodies_.find(h.body);
    if (b != bodies_.end() && --b->second.refs == 0) {
      bodies_total_ -= b->second.size;
      bodies_.erase(b);
    }
  }
  other_total_ -= h.other;
  if (auto c = by_client_.find(h.key); c != by_client_.end() && (c->second -= h.body_size + h.other) == 0)
    by_client_.erase(c);
  by_conn_.erase(it);
}

size_t ResponseBudget::held_by(const ClientKey& key) const noexcept {
  const auto it = by_client_.find(key);
  return it == by_client_.end() ? 0 : it->second;
}

size_t ResponseBudget::share() const noexcept { return total_ / std::max<size_t>(1, by_client_.size()); }

bool ResponseBudget::may_start(const ClientKey& key) const noexcept {
  const size_t mine = held_by(key);
  if (mine == 0) return true;
  return mine < share() && held() < total_;
}

}  // namespace memcg::exporter
