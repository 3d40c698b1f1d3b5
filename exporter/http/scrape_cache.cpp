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
  return gzip ? build_gzip(snap, key, render) : build_text(render);
}

void ScrapeCache::render_values(const Render& render) {
  values_.clear();
  values_.reserve(last_size_ + last_size_ / 8);  // one allocation, not a doubling series
  starts_.clear();
  render.values(values_, starts_);
  last_size_ = values_.size();
}

ScrapeCache::Body ScrapeCache::build_text(const Render& render) {
  trim_due_ = true;  // the whole text, a new buffer each time
  auto t = std::make_shared<std::string>();
  t->reserve(last_size_ * 3 / 2);
  render.identity(*t);
  render_values(render);
  t->append(values_.view());
  keep_buffers_bounded();
  return {text_ = std::move(t), false};
}

void ScrapeCache::refresh_head(const Snapshot& snap, const void* config, const Render& render) {
  if (head_ && head_source_.same_as(snap, config)) {
    ++counts_.heads_reused;
    return;
  }
  std::string identity;
  render.identity(identity);
  auto h = std::make_shared<DeflatedPart>();
  if (!deflate_part(identity, *h)) h.reset();
  head_ = std::move(h);
  head_source_.take(snap, config);
}

bool ScrapeCache::zip_values(std::string& out) {
  const StableFamilies::Split& split = families_.split(values_.view(), starts_);
  parts_.assign(1, head_.get());
  parts_.insert(parts_.end(), split.parts.begin(), split.parts.end());
  if (!gzip_join(parts_, split.tail, out, deflate_)) return false;
  counts_.families_reused += split.families_reused;
  counts_.runs_reused += split.runs_reused;
  counts_.families_compressed += split.built;
  counts_.bytes_reused += split.reused_bytes;
  return true;
}

ScrapeCache::Body ScrapeCache::build_gzip(const Snapshot& snap, Key key, const Render& render) {
  refresh_head(snap, key.config, render);
  render_values(render);
  auto z = std::make_shared<std::string>();
  if (!head_ || !zip_values(*z)) {  // no memory: serve it plain
    auto t = std::make_shared<std::string>();
    render.identity(*t);
    t->append(values_.view());
    keep_buffers_bounded();
    trim_due_ = true;
    return {text_ = std::move(t), false};
  }
  keep_buffers_bounded();
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
