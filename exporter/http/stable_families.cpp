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

// The family's leading comment lines (HELP, TYPE), ending with a newline.
std::string_view header_of(std::string_view family) noexcept {
  size_t at = 0;
  while (at < family.size() && family[at] == '#') {
    const size_t nl = family.find('\n', at);
    if (nl == std::string_view::npos) return {};
    at = nl + 1;
  }
  return family.substr(0, at);
}

// Whether a family's samples may be served in any order: its TYPE line says
// gauge or counter (one sample per series, none tied to another).
bool any_order(std::string_view header, std::string_view name) noexcept {
  constexpr std::string_view kType = "# TYPE ";
  for (size_t at = header.find(kType); at != std::string_view::npos; at = header.find(kType, at + 1)) {
    std::string_view line = header.substr(at + kType.size());
    line = line.substr(0, line.find('\n'));
    if (line.size() <= name.size() || line.substr(0, name.size()) != name || line[name.size()] != ' ') continue;
    const std::string_view type = line.substr(name.size() + 1);
    return type == "gauge" || type == "counter";
  }
  return false;
}

// The end of the run of `lines` lines that starts at `from` (or the text's end).
size_t run_end(std::string_view text, size_t from, size_t lines) noexcept {
  for (size_t n = 0; n < lines && from < text.size(); ++n) {
    const size_t nl = text.find('\n', from);
    from = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  return from;
}

}  // namespace

StableFamilies::StableFamilies() : key_(sys::random_digest_key()) {}

size_t StableFamilies::family(std::string_view name, size_t hint) {
  // Families come in the same order every scrape: the hint is nearly always it.
  if (hint < families_.size() && families_[hint].name == name) return hint;
  for (size_t i = 0; i < families_.size(); ++i)
    if (families_[i].name == name) return i;
  families_.emplace_back().name = name;
  return families_.size() - 1;
}

const DeflatedPart* StableFamilies::reuse(Piece& p, std::string_view bytes, size_t& built) {
  const uint64_t d = text::digest(bytes, key_);
  const bool same = d == p.digest && bytes.size() == p.length;
  p.digest = d;
  p.length = bytes.size();
  p.unchanged = same ? p.unchanged + 1 : 0;
  if (!same) p.part.reset();
  if (p.unchanged < kRepeatsBeforeApart) return nullptr;
  // Compressed now, once, for this scrape and the next ones. Without memory
  // it stays in the tail.
  if (!p.part) {
    auto part = std::make_shared<DeflatedPart>();
    if (deflate_part(bytes, *part)) p.part = std::move(part);
    if (p.part) ++built;
  }
  return p.part.get();
}

bool StableFamilies::open_largest() {
  size_t best = changed_.size(), header = 0;
  for (size_t i = 0; i < changed_.size(); ++i) {
    // Text of no family comes first in the tail, as it came: nothing opens then.
    if (changed_[i].family == kNoFamily) return false;
    const std::string_view b = changed_[i].bytes;
    if (b.size() < kMinOpenBytes || (best < changed_.size() && b.size() <= changed_[best].bytes.size())) continue;
    const std::string_view h = header_of(b);
    if (any_order(h, families_[changed_[i].family].name)) best = i, header = h.size();
  }
  if (best == changed_.size()) return false;
  const std::string_view bytes = changed_[best].bytes;
  std::vector<Piece>& runs = families_[changed_[best].family].runs;
  size_t n = 0, reusable = 0;
  for (size_t from = 0, end = header; from < bytes.size(); from = end, end = run_end(bytes, from, kChunkLines)) {
    if (runs.size() <= n) runs.emplace_back();
    const std::string_view run = bytes.substr(from, end - from);
    const DeflatedPart* part = reuse(runs[n], run, split_.runs_built);
    if (part && n > 0) reusable += run.size();
    open_.push_back({run, part});
    ++n;
  }
  runs.resize(n);
  // The header must lead the family's lines, and some run must be worth it.
  if (open_.empty() || !open_.front().part || reusable == 0) {
    open_.clear();
    return false;
  }
  open_index_ = best;
  return true;
}

const StableFamilies::Split& StableFamilies::split(std::string_view text, std::span<const size_t> starts) {
  split_.parts.clear();  // its capacity kept
  split_.tail = {};
  split_.reused_bytes = split_.families_reused = split_.built = split_.runs_reused = split_.runs_built = 0;
  changed_.clear();
  open_.clear();
  // Offsets out of order or past the text would lose bytes: all in the tail.
  if (!std::is_sorted(starts.begin(), starts.end()) || (!starts.empty() && starts.back() > text.size())) {
    split_.tail = text;
    return split_;
  }
  // What no family covers (text before the first start) stays in the tail, first.
  const size_t first = starts.empty() ? text.size() : starts.front();
  if (first > 0) changed_.push_back({text.substr(0, first), kNoFamily});
  size_t named = 0;  // the families met so far: where the next one was last time
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : text.size();
    if (starts[k] == end) continue;  // a family without samples
    const std::string_view bytes = text.substr(starts[k], end - starts[k]);
    const std::string_view name = family_name(bytes);
    const size_t f = name.empty() ? kNoFamily : family(name, named++);
    const DeflatedPart* part = f == kNoFamily ? nullptr : reuse(families_[f].whole, bytes, split_.built);
    if (part) {
      split_.parts.push_back(part);
      split_.reused_bytes += bytes.size();
      ++split_.families_reused;
    } else {
      changed_.push_back({bytes, f});
    }
  }
  const bool open = open_largest();
  if (split_.parts.empty() && !open) {
    split_.tail = text;
    return split_;
  }
  tail_.clear();
  // The open family last among the parts, its changed runs first in the
  // tail: its lines stay together.
  for (const Run& r : open_) {
    if (!r.part) continue;
    split_.parts.push_back(r.part);
    split_.reused_bytes += r.bytes.size();
    ++split_.runs_reused;
  }
  for (const Run& r : open_)
    if (!r.part) tail_.append(r.bytes);
  for (size_t i = 0; i < changed_.size(); ++i)
    if (!open || i != open_index_) tail_.append(changed_[i].bytes);
  split_.tail = tail_.view();
  return split_;
}

void StableFamilies::shrink(size_t keep) noexcept {
  if (tail_.capacity() > keep) tail_.release();
}

}  // namespace memcg::exporter
