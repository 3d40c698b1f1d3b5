// The leading run of decimal digits of a byte range, eight bytes at a time:
// a memory.stat re-read parses ~50 values of up to 13 digits, and a digit
// at a time (a load, a compare, a multiply-add) took about 8 instructions a
// byte under callgrind.
// Exact for any bytes: the word tests never carry from one byte into the
// next, so a byte outside '0'..'9' (a space, a newline, 0xff) ends the run
// where a byte loop would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace memcg::parse {

struct DigitRun {
  size_t len = 0;      // digits in the run, at most DigitRun::kMax
  uint64_t value = 0;  // their value
  static constexpr size_t kMax = 19;  // 19 digits cannot overflow a uint64_t
};

namespace digits_detail {

// Bytes p[0..8) as loaded little-endian, each XOR '0': a digit byte is 0..9.
inline uint64_t load_xor_zero(const char* p) noexcept {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w ^ 0x3030303030303030ULL;
}

// How many of the eight bytes, from the first, are digits.
inline size_t leading_digits(uint64_t x) noexcept {
  // A byte is not a digit when its low 7 bits are >= 10 (adding 0x76 sets
  // bit 7, at most 0x7f + 0x76 = 0xf5: no carry out) or its bit 7 is set.
  const uint64_t high = 0x8080808080808080ULL;
  const uint64_t not_digit = (((x & ~high) + 0x7676767676767676ULL) | x) & high;
  return not_digit ? static_cast<size_t>(__builtin_ctzll(not_digit)) / 8 : 8;
}

// The value of the first n (1..8) digits of x, the first the most significant.
inline uint64_t value_of(uint64_t x, size_t n) noexcept {
  uint64_t v = x << (8 * (8 - n));  // the n digits up top, zeros (leading zeros) below
  v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFULL;          // pairs: two digits each
  v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFULL;        // quads
  return (v * 10000 + (v >> 32)) & 0x00000000FFFFFFFFULL;   // all eight
}

}  // namespace digits_detail

// The digits p[0..avail) starts with, at most DigitRun::kMax of them.
inline DigitRun digit_run(const char* p, size_t avail) noexcept {
  static constexpr uint64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
  DigitRun r;
  // One digit alone first: most of a memory.stat's values are 0, where the
  // word's arithmetic costs more than the byte.
  if (avail >= 2) {
    const unsigned d0 = static_cast<unsigned char>(p[0]) - unsigned{'0'};
    const unsigned d1 = static_cast<unsigned char>(p[1]) - unsigned{'0'};
    if (d0 > 9) return r;
    if (d1 > 9) return {1, d0};
  }
  while (r.len + 8 <= avail && r.len + 8 <= DigitRun::kMax) {
    const uint64_t x = digits_detail::load_xor_zero(p + r.len);
    const size_t n = digits_detail::leading_digits(x);
    if (n == 0) return r;
    r.value = r.value * kPow10[n] + digits_detail::value_of(x, n);
    r.len += n;
    if (n < 8) return r;
  }
  for (; r.len < avail && r.len < DigitRun::kMax; ++r.len) {
    const unsigned d = static_cast<unsigned char>(p[r.len]) - unsigned{'0'};
    if (d > 9) break;
    r.value = r.value * 10 + d;
  }
  return r;
}

}  // namespace memcg::parse
