#include "exporter/http/scrape_cache.h"

#include <utility>

namespace memcg::exporter {

bool ScrapeCache::HeadSource::same_as(const Snapshot& snap, const void* cfg) const {
  // Without a roster (a snapshot built by hand) nothing says the set is the same.
  return snap.roster && cfg == config && snap.records == records && snap.roster == roster && snap.removed == removed;
}

void ScrapeCache::HeadSource::take(const Snapshot& snap, const void* cfg) {
  config = cfg;
  records = snap.records;
  roster = snap.roster;
  removed = snap.removed;
}

ScrapeCache::Body ScrapeCache::get(const Snapshot& snap, Key key, bool gzip, const Render& render) {
  std::lock_guard lock(mu_);
  if (!(key == key_)) {
    key_ = key;
    text_.reset();
    gzip_.reset();
  }
  if (gzip && gzip_) return {gzip_, true};
  if (!gzip && text_) return {text_, false};
  ++counts_.renders;
  if (!gzip) {
    trim_due_ = true;  // the whole text, a new buffer each time
    auto t = std::make_shared<std::string>();
    t->reserve(last_size_ * 3 / 2);
    render.identity(*t);
    values_.clear();
    starts_.clear();
    render.values(values_, starts_);
    t->append(values_.view());
    keep_buffers_bounded();
    return {text_ = std::move(t), false};
  }
  if (head_ && head_source_.same_as(snap, key.config)) {
    ++counts_.heads_reused;
  } else {
    std::string identity;
    render.identity(identity);
    auto h = std::make_shared<DeflatedPart>();
    if (!deflate_part(identity, *h)) h.reset();
    head_ = std::move(h);
    head_source_.take(snap, key.config);
  }
  text::Buffer& values = values_;
  values.clear();
  values.reserve(last_size_ + last_size_ / 8);  // one allocation, not a doubling series
  starts_.clear();
  render.values(values, starts_);
  last_size_ = values.size();
  auto z = std::make_shared<std::string>();
  bool zipped = false;
  if (head_) {
    const StableFamilies::Split& split = families_.split(values.view(), starts_);
    parts_.assign(1, head_.get());
    parts_.insert(parts_.end(), split.parts.begin(), split.parts.end());
    zipped = gzip_join(parts_, split.tail, *z, deflate_);
    if (zipped) {
      counts_.families_reused += split.parts.size();
      counts_.families_compressed += split.built;
      counts_.bytes_reused += split.reused_bytes;
    }
  }
  std::shared_ptr<const std::string> text;
  if (!zipped) {  // no memory: serve it plain
    auto t = std::make_shared<std::string>();
    render.identity(*t);
    t->append(values.view());
    text = std::move(t);
  }
  keep_buffers_bounded();
  if (!zipped) {
    trim_due_ = true;
    return {text_ = std::move(text), false};
  }
  ++counts_.compressions;
  return {gzip_ = std::move(z), true};
}

void ScrapeCache::keep_buffers_bounded() {
  if (values_.capacity() <= kKeptValuesBytes) return;
  values_.release();
  families_.shrink(0);
  deflate_.shrink(kKeptValuesBytes + kKeptValuesBytes / 8);
  trim_due_ = true;
}

void ScrapeCache::drop_before(uint64_t pass) {
  std::lock_guard lock(mu_);
  if (key_.pass >= pass) return;
  text_.reset();
  gzip_.reset();
}

bool ScrapeCache::take_trim_due() {
  std::lock_guard lock(mu_);
  return std::exchange(trim_due_, false);
}

ScrapeCache::Counts ScrapeCache::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

}  // namespace memcg::exporter
