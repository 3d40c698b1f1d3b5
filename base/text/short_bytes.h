// Copies and comparisons of the short byte runs the parsers and the text
// exposition handle by the tens of thousands: a memory.stat key, a label, a
// number, 3 to 100 bytes each. Inline, in 8-byte words, instead of calls
// to memcpy and memcmp: the library's routines pick a vector code path at
// every call, which costs more than the copy itself at these sizes (and
// under emulation, where vector instructions are interpreted, many times
// more: docs/performance.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace memcg::text {

// Whether a[0..n) == b[0..n). The tail is one more word overlapping the
// last one compared (or two overlapping halves below 8 bytes), not a loop
// of bytes: a memory.stat key is 3 to 30 bytes, and with the byte loop the
// comparison was a quarter of a re-read's parse (docs/performance.md).
inline bool same_bytes(const char* a, const char* b, size_t n) noexcept {
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) {
      uint64_t x, y;
      std::memcpy(&x, a + i, 8);  // fixed sizes: one load each, no call
      std::memcpy(&y, b + i, 8);
      if (x != y) return false;
    }
    uint64_t x, y;
    std::memcpy(&x, a + n - 8, 8);
    std::memcpy(&y, b + n - 8, 8);
    return x == y;
  }
  if (n >= 4) {
    uint32_t x0, y0, x1, y1;
    std::memcpy(&x0, a, 4);
    std::memcpy(&y0, b, 4);
    std::memcpy(&x1, a + n - 4, 4);
    std::memcpy(&y1, b + n - 4, 4);
    return x0 == y0 && x1 == y1;
  }
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// dst[0..n) = src[0..n); the two must not overlap.
inline void copy_short(char* dst, const char* src, size_t n) noexcept {
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint64_t x;
      std::memcpy(&x, src + i, 8);
      // An empty statement the word passes through: the compiler would
      // otherwise see a copy loop and turn it back into a call to memcpy.
      __asm__("" : "+r"(x));
      std::memcpy(dst + i, &x, 8);
    }
    uint64_t tail;  // the last word, overlapping what the loop wrote with the same bytes
    std::memcpy(&tail, src + n - 8, 8);
    std::memcpy(dst + n - 8, &tail, 8);
  } else if (n >= 4) {
    uint32_t head, tail;
    std::memcpy(&head, src, 4);
    std::memcpy(&tail, src + n - 4, 4);
    std::memcpy(dst, &head, 4);
    std::memcpy(dst + n - 4, &tail, 4);
  } else if (n > 0) {
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

}  // namespace memcg::text
