// gzip for HTTP responses, with
// libdeflate at level 1, which compresses a whole buffer in one call: on a
// 1.5 MB exposition it took 5.8 ms where zlib's level 5 took 28 ms, for 2 %
// smaller output. ISA-L's igzip (level 1) was faster alone on that buffer
// (2.1 ms) but slower inside a scrape (docs/performance.md, "Scrape cost").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

struct libdeflate_compressor;

namespace memcg::exporter {

// Appends the gzip encoding of `in` to `out` (one member, readable by any
// gzip reader). Returns false, leaving `out` as it was, if it cannot.
bool gzip_compress(std::string_view in, std::string& out);

// A part of a gzip body compressed once and reused: raw deflate blocks that
// end byte-aligned and not final (zlib's sync flush), with the CRC-32 and
// length of what they hold. gzip_join() puts such parts in front of a tail
// compressed per call, as ONE gzip member: several members would do too for
// Go's reader, but curl --compressed stops after the first.
struct DeflatedPart {
  std::string deflate;
  uint32_t crc = 0;
  uint64_t length = 0;
};
bool deflate_part(std::string_view in, DeflatedPart& out);

// What compressing a tail needs, kept between scrapes by their one caller
// (the scrape cache, under its lock): a compressor and its output buffer
// allocated anew for every scrape were fresh pages the kernel faulted in
// and zeroed each time (docs/performance.md). Not thread-safe.
class DeflateWorkspace {
 public:
  DeflateWorkspace();
  ~DeflateWorkspace();
  DeflateWorkspace(const DeflateWorkspace&) = delete;
  DeflateWorkspace& operator=(const DeflateWorkspace&) = delete;
  // Compresses `in` into raw deflate blocks, the last one final; empty on
  // failure (no memory). Valid until the next call.
  std::string_view deflate(std::string_view in);
  // Gives back an output buffer larger than `keep` bytes.
  void shrink(size_t keep) noexcept;

 private:
  ::libdeflate_compressor* compressor_ = nullptr;
  char* buf_ = nullptr;
  size_t cap_ = 0;
};

// Appends header, the parts in order, the tail's deflate blocks (the last one
// final) and the trailer to `out`; `ws` compresses the tail.
bool gzip_join(std::span<const DeflatedPart* const> parts, std::string_view tail, std::string& out, DeflateWorkspace& ws);

// True when an Accept-Encoding header value allows gzip (q=0 refuses it).
bool accepts_gzip(std::string_view accept_encoding) noexcept;

}  // namespace memcg::exporter
