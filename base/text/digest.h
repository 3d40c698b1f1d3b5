// A keyed 64-bit digest of a file's bytes: whether a re-read returned the
// very bytes of the read before it, without keeping those bytes (1.5 KiB of
// memory.stat per cgroup) or parsing them again. About one multiplication per
// 16 bytes: a memory.stat of ~1.5 KiB digests in ~470 instructions where
// its parse takes ~5,600 (docs/performance.md).
//
// Not cryptographic. A block's multiplication by zero (a word equal to a key
// word) loses the block's other word, so the key must be the caller's secret,
// random per process: then the bytes a cgroup's counters make cannot be
// chosen to collide with the previous read's, and two different texts share
// a digest with a chance of about 2^-64 per comparison.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace memcg::text {

struct DigestKey {
  uint64_t k0 = 0x243f6a8885a308d3, k1 = 0x13198a2e03707344, k2 = 0xa4093822299f31d0;
};

namespace detail {
// Both halves of the 128-bit product folded into one word: every input bit
// reaches the result through the multiplication.
// (The 128-bit type is a GNU extension: one `mul` on x86-64.)
__extension__ using U128 = unsigned __int128;
inline uint64_t fold_multiply(uint64_t a, uint64_t b) noexcept {
  const U128 p = static_cast<U128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}
inline uint64_t word_at(const char* p) noexcept {
  uint64_t w;
  std::memcpy(&w, p, 8);  // fixed size: one load, no call
  return w;
}
}  // namespace detail

// The blocks are chained (each one's multiplication takes the digest so far),
// so a change anywhere, and a change of order, reaches the result; the length
// is mixed in last, so texts that differ only by a tail of zero bytes differ.
inline uint64_t digest(std::string_view s, const DigestKey& key) noexcept {
  const char* p = s.data();
  const size_t n = s.size();
  uint64_t h = key.k0;
  if (n >= 16) {
    size_t i = 0;
    for (; i + 16 < n; i += 16) h = detail::fold_multiply(detail::word_at(p + i) ^ key.k1 ^ h, detail::word_at(p + i + 8) ^ key.k2);
    // The last 16 bytes, overlapping the block before where n is not a
    // multiple of 16: the same bytes twice, never a byte loop.
    h = detail::fold_multiply(detail::word_at(p + n - 16) ^ key.k1 ^ h, detail::word_at(p + n - 8) ^ key.k2);
  } else {
    // 0 to 15 bytes, in two zero-padded words.
    char buf[16] = {};
    if (n) std::memcpy(buf, p, n);
    h = detail::fold_multiply(detail::word_at(buf) ^ key.k1 ^ h, detail::word_at(buf + 8) ^ key.k2);
  }
  // An odd multiplier, never zero whatever the key and the length.
  return detail::fold_multiply(h ^ key.k0 ^ static_cast<uint64_t>(n), key.k2 | 1);
}

}  // namespace memcg::text
