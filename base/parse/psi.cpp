#include "base/parse/psi.h"

#include "base/parse/number.h"

namespace memcg::parse {
namespace {

// The kernel prints each average as "%lu.%02lu" (kernel/sched/psi.c,
// psi_show), at most "100.00". That form is read digit by digit: the
// integer of hundredths divided by 100 is the double nearest the decimal,
// as from_chars would give, for a fraction of from_chars' instructions
// (the probe parses memory.pressure whenever a cgroup moves, and a
// re-read takes it along). Anything else goes to parse_double as before.
std::optional<double> parse_average(std::string_view v) noexcept {
  if (v.size() >= 4 && v.size() <= 6 && v[v.size() - 3] == '.') {
    const auto whole = parse_u64(v.substr(0, v.size() - 3)), cents = parse_u64(v.substr(v.size() - 2));
    if (whole && cents) return static_cast<double>(*whole * 100 + *cents) / 100.0;
  }
  return parse_double(v);
}

bool parse_psi_fields(std::string_view rest, PsiLine& out) noexcept {
  unsigned seen = 0;
  while (!rest.empty()) {
    const size_t sp = rest.find(' ');
    const std::string_view field = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp + 1);
    if (field.empty()) continue;
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view name = field.substr(0, eq), val = field.substr(eq + 1);
    if (name == "total") {
      auto v = parse_u64(val);
      if (!v) return false;
      out.total_us = *v;
      seen |= 8;
      continue;
    }
    double* slot = name == "avg10" ? &out.avg10 : name == "avg60" ? &out.avg60 : name == "avg300" ? &out.avg300 : nullptr;
    if (!slot) continue;
    auto v = parse_average(val);
    // A share of time: the kernel prints 0.00..100.00. A negative value (or
    // -0, inf, nan, which from_chars also accepts) is malformed (found by fuzzing).
    if (!v || !(*v >= 0 && *v <= 100) || val.front() == '-') return false;
    *slot = *v;
    seen |= name == "avg10" ? 1u : name == "avg60" ? 2u : 4u;
  }
  return seen == 15;
}

}  // namespace

uint32_t parse_psi(std::string_view text, Psi& out) noexcept {
  out = Psi{};
  uint32_t malformed = 0;
  std::string_view line;
  while (next_line(text, line)) {
    if (line.empty()) continue;
    PsiLine* target = line.starts_with("some ") ? &out.some : line.starts_with("full ") ? &out.full : nullptr;
    if (!target || target->present) {
      ++malformed;
      continue;
    }
    PsiLine parsed;
    if (!parse_psi_fields(line.substr(5), parsed)) {
      ++malformed;
      continue;
    }
    parsed.present = true;
    *target = parsed;
  }
  return malformed;
}

}  // namespace memcg::parse
