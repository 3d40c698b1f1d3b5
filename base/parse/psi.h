// memory.pressure (PSI): "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" and a
// "full ..." line. total is cumulative stall time in microseconds.
#pragma once

#include <cstdint>
#include <string_view>

namespace memcg::parse {

struct PsiLine {
  bool present = false;
  double avg10 = 0, avg60 = 0, avg300 = 0;  // percent
  uint64_t total_us = 0;
};

struct Psi {
  PsiLine some, full;
};

// Returns the number of malformed lines (unknown fields are ignored, so a
// kernel that adds one does not break us; a missing field is malformed).
uint32_t parse_psi(std::string_view text, Psi& out) noexcept;

}  // namespace memcg::parse
