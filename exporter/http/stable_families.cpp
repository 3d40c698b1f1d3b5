#include "exporter/http/stable_families.h"

#include <algorithm>

#include "base/sys/random_key.h"

namespace memcg::exporter {
namespace {

// A family's text begins "# HELP <name> ": its name, or empty for a range
// that does not (a render of something else; never reused).
std::string_view family_name(std::string_view text) noexcept {
  constexpr std::string_view kHelp = "# HELP ";
  if (text.substr(0, kHelp.size()) != kHelp) return {};
  text.remove_prefix(kHelp.size());
  return text.substr(0, text.find(' '));
}

}  // namespace

StableFamilies::StableFamilies() : key_(sys::random_digest_key()) {}

StableFamilies::Family& StableFamilies::family(std::string_view name, size_t hint) {
  // Families come in the same order every scrape: the hint is nearly always it.
  if (hint < families_.size() && families_[hint].name == name) return families_[hint];
  for (Family& f : families_)
    if (f.name == name) return f;
  Family& f = families_.emplace_back();
  f.name = name;
  return f;
}

const DeflatedPart* StableFamilies::reuse(Family& f, std::string_view bytes) {
  const uint64_t d = text::digest(bytes, key_);
  const bool same = d == f.digest && bytes.size() == f.length;
  f.digest = d;
  f.length = bytes.size();
  f.unchanged = same ? f.unchanged + 1 : 0;
  if (!same) f.part.reset();
  if (f.unchanged < kRepeatsBeforeApart) return nullptr;
  // Compressed now, once, for this scrape and the next ones. Without memory
  // it stays in the tail.
  if (!f.part) {
    auto p = std::make_shared<DeflatedPart>();
    if (deflate_part(bytes, *p)) f.part = std::move(p);
    if (f.part) ++split_.built;
  }
  return f.part.get();
}

const StableFamilies::Split& StableFamilies::split(std::string_view text, std::span<const size_t> starts) {
  split_.parts.clear();
  split_.reused_bytes = 0;
  split_.built = 0;
  changed_.clear();
  // Offsets out of order or past the text would lose bytes: all in the tail.
  if (!std::is_sorted(starts.begin(), starts.end()) || (!starts.empty() && starts.back() > text.size())) {
    split_.tail = text;
    return split_;
  }
  size_t named = 0;  // the families met so far: where the next one was last time
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : text.size();
    if (starts[k] == end) continue;  // a family without samples
    const std::string_view bytes = text.substr(starts[k], end - starts[k]);
    const std::string_view name = family_name(bytes);
    const DeflatedPart* part = name.empty() ? nullptr : reuse(family(name, named++), bytes);
    if (part) {
      split_.parts.push_back(part);
      split_.reused_bytes += bytes.size();
    } else {
      changed_.push_back(bytes);
    }
  }
  // What no family covers (text before the first start) stays in the tail, first.
  const size_t first = starts.empty() ? text.size() : starts.front();
  if (split_.parts.empty()) {
    split_.tail = text;
    return split_;
  }
  tail_.clear();
  tail_.append(text.substr(0, first));
  for (std::string_view c : changed_) tail_.append(c);
  split_.tail = tail_.view();
  return split_;
}

void StableFamilies::shrink(size_t keep) noexcept {
  if (tail_.capacity() > keep) tail_.release();
}

}  // namespace memcg::exporter
