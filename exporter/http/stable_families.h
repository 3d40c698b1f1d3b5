// The families of a gzip body whose text did not change over the last
// scrapes keep their compressed bytes. In a quiet tree most of memory.events,
// the PSI totals, swap and the stat event counters read the same from one
// scrape to the next (zeros, mostly), while the timestamps, the read CPU and
// any cgroup that moved change their families' text. Compressing the values
// was about half of a scrape's CPU (docs/performance.md, "Scrape cost").
//
// A family found unchanged at two scrapes in a row is compressed on its own
// (zlib, sync flush: a DeflatedPart) and that part is reused for as long as
// its text stays the same; the other families are the tail that libdeflate
// compresses per scrape. (zlib takes about twice libdeflate's time per byte:
// a family that changes every other scrape would cost more compressed
// apart at each of its repeats than in the tail, so one repeat is not
// enough.) The body then lists the unchanged families before the changed
// ones. The text format asks only that a family's lines come together, not
// any order of families, and the plain-text body keeps the rendered order.
// Unchanged means the same keyed digest and length (base/text/digest.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/text/buffer.h"
#include "base/text/digest.h"
#include "exporter/http/gzip.h"

namespace memcg::exporter {

class StableFamilies {
 public:
  StableFamilies();

  // `text` cut at `starts` (where each family begins; empty ranges are
  // families without samples). `parts`: the unchanged families' compressed
  // bytes, in text order; `tail`: the other families' text, in text order
  // (`text` itself when no part is reused). Valid until the next call.
  struct Split {
    std::vector<const DeflatedPart*> parts;
    std::string_view tail;
    size_t reused_bytes = 0;  // of text, in parts
    size_t built = 0;         // parts compressed in this call (a family's second repeat)
  };
  const Split& split(std::string_view text, std::span<const size_t> starts);

  // Gives back a tail buffer larger than `keep` bytes.
  void shrink(size_t keep) noexcept;

 private:
  struct Family {
    std::string name;
    uint64_t digest = 0;
    size_t length = 0;
    uint32_t unchanged = 0;  // scrapes in a row with the same text
    std::shared_ptr<const DeflatedPart> part;  // while the text stays as digested
  };
  static constexpr uint32_t kRepeatsBeforeApart = 2;
  Family& family(std::string_view name, size_t hint);
  // The family's part once its text repeated kRepeatsBeforeApart times in
  // a row (compressed at that call), else null; keeps the new digest.
  const DeflatedPart* reuse(Family& f, std::string_view bytes);

  std::vector<Family> families_;
  std::vector<std::string_view> changed_;
  text::Buffer tail_;
  Split split_;
  text::DigestKey key_;
};

}  // namespace memcg::exporter
