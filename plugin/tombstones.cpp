#include "plugin/tombstones.h"

namespace memcg {

void Tombstones::bury(const CgroupEntry& e, const runtime::ContainerRecord* record, TimePoint now, WallTime wall) {
  if (!e.id || !e.probe.events) return;
  auto id = std::make_shared<CgroupId>(*e.id);
  if (record) id->last_record = std::make_shared<const runtime::ContainerRecord>(*record);
  kept_.push_back({std::move(id), e.settings, e.probe.events, now, wall});
  changed_ = true;
}

void Tombstones::expire(TimePoint now, Duration retention, uint64_t max) {
  while (!kept_.empty() && now - kept_.front().at >= retention) {
    kept_.pop_front();
    changed_ = true;
  }
  while (kept_.size() > max) {
    kept_.pop_front();
    ++dropped_;
    changed_ = true;
  }
}

std::shared_ptr<const std::vector<CgroupView>> Tombstones::views() {
  if (changed_) {
    changed_ = false;
    if (kept_.empty()) {
      built_.reset();
    } else {
      auto b = std::make_shared<Built>();
      b->owners.assign(kept_.begin(), kept_.end());
      b->views.reserve(b->owners.size());
      for (const Kept& k : b->owners) {
        CgroupView& v = b->views.emplace_back();
        v.id = k.id.get();
        v.settings = k.settings.get();
        v.probe.events = k.events;
        v.removed_at = k.wall;
      }
      built_ = std::move(b);
    }
  }
  if (!built_) return nullptr;
  return {built_, &built_->views};
}

}  // namespace memcg
