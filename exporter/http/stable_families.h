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
//
// One changed family a scrape is also taken apart by lines: the largest
// changed gauge or counter family of at least kMinOpenBytes, which in a
// node where a few containers move is memory.stat's (over a quarter of the
// text, a few dozen of its thousands of lines changed). Its header (HELP,
// TYPE) and every run of kChunkLines samples are kept as the families are;
// the header and the unchanged runs are served from their parts, after the
// whole families, and its changed runs open the tail. A gauge's or
// counter's samples may come in any order within the family, and its lines
// still come together. Histograms and summaries are never taken apart
// (their lines go together per series).
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
    size_t reused_bytes = 0;     // of text, in parts
    size_t families_reused = 0;  // whole families in parts
    size_t built = 0;            // whole families compressed in this call (their second repeat)
    size_t runs_reused = 0;      // the open family's header and runs in parts
    size_t runs_built = 0;       // of which compressed in this call
  };
  const Split& split(std::string_view text, std::span<const size_t> starts);

  // Gives back a tail buffer larger than `keep` bytes.
  void shrink(size_t keep) noexcept;

 private:
  // A piece of text kept from scrape to scrape: a whole family, or the
  // header or a run of lines of one.
  struct Piece {
    uint64_t digest = 0;
    size_t length = 0;
    uint32_t unchanged = 0;  // scrapes in a row with the same text
    std::shared_ptr<const DeflatedPart> part;  // while the text stays as digested
  };
  struct Family {
    std::string name;
    Piece whole;
    std::vector<Piece> runs;  // [0]: the header; then kChunkLines samples each
  };
  static constexpr size_t kNoFamily = ~size_t{0};
  struct Changed {
    std::string_view bytes;
    size_t family;  // in families_ (a pointer would not outlive its growth); kNoFamily: text of no family
  };
  static constexpr uint32_t kRepeatsBeforeApart = 2;
  static constexpr size_t kChunkLines = 64;
  static constexpr size_t kMinOpenBytes = 16 * 1024;
  size_t family(std::string_view name, size_t hint);
  // The piece's part once its text repeated kRepeatsBeforeApart times in
  // a row (compressed at that call), else null; keeps the new digest.
  const DeflatedPart* reuse(Piece& p, std::string_view bytes, size_t& built);
  // Takes the largest changed gauge or counter family apart (open_); false
  // when none is worth it.
  bool open_largest();

  std::vector<Family> families_;
  std::vector<Changed> changed_;
  // The open family: its header and runs, as parts or text.
  struct Run {
    std::string_view bytes;
    const DeflatedPart* part;
  };
  std::vector<Run> open_;
  size_t open_index_ = 0;  // in changed_
  text::Buffer tail_;
  Split split_;
  text::DigestKey key_;
};

}  // namespace memcg::exporter
