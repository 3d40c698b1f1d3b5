#include "exporter/http/gzip.h"

#include <libdeflate.h>
#include <zlib.h>

#include <cctype>
#include <cstdlib>
#include <memory>

namespace memcg::exporter {
namespace {

// One compressor per call, at level 1: libdeflate's are not thread-safe, and
// a call compresses a whole scrape, so the allocation is noise.
using Compressor = std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)>;
Compressor compressor() { return {libdeflate_alloc_compressor(1), &libdeflate_free_compressor}; }

// libdeflate wants room for the worst case (about the input's size) but
// writes a tenth of it: compressing into a string resized to that bound
// zeroed, and so faulted in, ~1.3 MB per 1,000 cgroups that were never
// used. An uninitialised buffer is touched only where written; the result
// is copied out.
// (malloc, not new[]: no constructor to run, and nullptr on failure.)
using Scratch = std::unique_ptr<char, decltype(&std::free)>;
Scratch scratch(size_t n) { return Scratch(static_cast<char*>(std::malloc(n)), &std::free); }

}  // namespace

bool gzip_compress(std::string_view in, std::string& out) {
  const Compressor c = compressor();
  if (!c) return false;
  const size_t bound = libdeflate_gzip_compress_bound(c.get(), in.size());
  const auto buf = scratch(bound);
  if (!buf) return false;
  const size_t n = libdeflate_gzip_compress(c.get(), in.data(), in.size(), buf.get(), bound);
  if (n == 0) return false;
  out.append(buf.get(), n);
  return true;
}

bool deflate_part(std::string_view in, DeflatedPart& out) {
  z_stream zs{};
  // Raw deflate (windowBits -15): the gzip header and trailer are written by
  // gzip_join. Level 1: the identity part is compressed again whenever a
  // cgroup comes or goes, which on a busy node is most scrapes.
  if (deflateInit2(&zs, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  const size_t bound = deflateBound(&zs, static_cast<uLong>(in.size())) + 16;
  const auto buf = scratch(bound);
  bool ok = false;
  if (buf) {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(in.size());
    zs.next_out = reinterpret_cast<Bytef*>(buf.get());
    zs.avail_out = static_cast<uInt>(bound);
    // A sync flush ends on a byte boundary with an empty stored block, not
    // final: more blocks may follow.
    const int rc = deflate(&zs, Z_SYNC_FLUSH);
    ok = rc == Z_OK && zs.avail_in == 0;
    if (ok) out.deflate.assign(buf.get(), zs.total_out);
  }
  deflateEnd(&zs);
  out.crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(in.data()), static_cast<uInt>(in.size())));
  out.length = in.size();
  return ok;
}

DeflateWorkspace::DeflateWorkspace() : compressor_(libdeflate_alloc_compressor(1)) {}

DeflateWorkspace::~DeflateWorkspace() {
  libdeflate_free_compressor(compressor_);
  std::free(buf_);
}

std::string_view DeflateWorkspace::deflate(std::string_view in) {
  if (!compressor_) return {};
  const size_t bound = libdeflate_deflate_compress_bound(compressor_, in.size());
  if (bound > cap_) {
    // Uninitialised, as scratch() above: only the pages written are touched.
    std::free(buf_);
    buf_ = static_cast<char*>(std::malloc(bound));
    cap_ = buf_ ? bound : 0;
    if (!buf_) return {};
  }
  const size_t n = libdeflate_deflate_compress(compressor_, in.data(), in.size(), buf_, cap_);
  return {buf_, n};
}

void DeflateWorkspace::shrink(size_t keep) noexcept {
  if (cap_ <= keep) return;
  std::free(buf_);
  buf_ = nullptr;
  cap_ = 0;
}

bool gzip_join(std::span<const DeflatedPart* const> parts, std::string_view tail, std::string& out, DeflateWorkspace& ws) {
  static constexpr unsigned char kHeader[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};  // deflate, no name, Unix
  const std::string_view blocks = ws.deflate(tail);
  if (blocks.empty()) return false;
  size_t size = sizeof kHeader + blocks.size() + 8;
  for (const DeflatedPart* p : parts) size += p->deflate.size();
  out.reserve(out.size() + size);
  out.append(reinterpret_cast<const char*>(kHeader), sizeof kHeader);
  // The CRC of the parts from theirs (zlib's combine: logarithmic in the
  // length, the bytes are not read again), then continued over the tail.
  uint32_t crc = 0;
  uint64_t length = 0;
  for (const DeflatedPart* p : parts) {
    out.append(p->deflate);
    crc = length ? static_cast<uint32_t>(crc32_combine(crc, p->crc, static_cast<z_off_t>(p->length))) : p->crc;
    length += p->length;
  }
  crc = libdeflate_crc32(crc, tail.data(), tail.size());
  out.append(blocks);
  const auto isize = static_cast<uint32_t>(length + tail.size());  // ISIZE: modulo 2^32
  for (uint32_t v : {crc, isize})
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return true;
}

bool accepts_gzip(std::string_view h) noexcept {
  while (!h.empty()) {
    const size_t comma = h.find(',');
    std::string_view item = h.substr(0, comma);
    h = comma == std::string_view::npos ? std::string_view{} : h.substr(comma + 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    const size_t semi = item.find(';');
    std::string_view coding = item.substr(0, semi);
    while (!coding.empty() && std::isspace(static_cast<unsigned char>(coding.back()))) coding.remove_suffix(1);
    if (coding != "gzip" && coding != "*") continue;
    if (semi == std::string_view::npos) return true;
    std::string_view params = item.substr(semi + 1);
    const size_t q = params.find("q=");
    if (q == std::string_view::npos) return true;
    std::string_view v = params.substr(q + 2);
    // q=0, q=0.0, q=0.000 refuse; anything else accepts.
    bool zero = !v.empty() && v.front() == '0';
    for (size_t i = 1; zero && i < v.size() && v[i] != ';' && !std::isspace(static_cast<unsigned char>(v[i])); ++i)
      zero = v[i] == '.' || v[i] == '0';
    return !zero;
  }
  return false;
}

}  // namespace memcg::exporter
