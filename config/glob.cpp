#include "config/glob.h"

namespace memcg::config {

std::optional<Glob> Glob::compile(std::string_view pattern, std::string* error) {
  auto fail = [&](std::string msg) -> std::optional<Glob> {
    if (error) *error = std::move(msg);
    return std::nullopt;
  };
  if (pattern.empty()) return fail("empty glob");
  Glob g;
  g.pattern_ = std::string(pattern);
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      if (i + 1 == pattern.size()) return fail("glob ends with a lone backslash");
      g.tokens_.push_back(Token{Op::literal, pattern[++i], false, {}});
    } else if (c == '?') {
      g.tokens_.push_back(Token{Op::any_char, 0, false, {}});
    } else if (c == '*') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '*') {
        const bool seg_start = i == 0 || pattern[i - 1] == '/';
        const bool seg_end = i + 2 == pattern.size() || pattern[i + 2] == '/';
        if (!seg_start || !seg_end) return fail("'**' must be a whole path segment");
        ++i;
        // "**/" consumes its slash so "a/**/b" can match "a/b".
        if (i + 1 < pattern.size()) ++i;
        g.tokens_.push_back(Token{Op::globstar, 0, false, {}});
      } else {
        g.tokens_.push_back(Token{Op::star, 0, false, {}});
      }
    } else if (c == '[') {
      Token t{Op::set, 0, false, {}};
      if (std::string why = parse_set(pattern, i, t); !why.empty()) return fail(why);
      g.tokens_.push_back(std::move(t));
    } else {
      g.tokens_.push_back(Token{Op::literal, c, false, {}});
    }
  }
  return g;
}

std::string Glob::parse_set(std::string_view pattern, size_t& i, Token& t) {
  size_t j = i + 1;
  if (j < pattern.size() && (pattern[j] == '!' || pattern[j] == '^')) {
    t.negate = true;
    ++j;
  }
  for (bool first = true; j < pattern.size(); first = false) {
    char lo = pattern[j];
    if (lo == ']' && !first) {
      i = j;
      return {};
    }
    if (lo == '\\' && j + 1 < pattern.size()) lo = pattern[++j];
    if (lo == '/') return "'/' cannot appear in a character set";
    char hi = lo;
    if (j + 2 < pattern.size() && pattern[j + 1] == '-' && pattern[j + 2] != ']') {
      hi = pattern[j + 2];
      if (hi == '\\' && j + 3 < pattern.size()) hi = pattern[++j + 2];
      j += 2;
      if (hi < lo) return "character range is reversed in '" + std::string(pattern) + "'";
    }
    t.ranges.push_back(lo);
    t.ranges.push_back(hi);
    ++j;
  }
  return "unterminated '[' in '" + std::string(pattern) + "'";
}

bool Glob::matches(std::string_view path) const noexcept {
  // memo[ti * (n + 1) + si]: -1 unknown, 0 no match, 1 match. Each state is
  // decided once, so matching is O(tokens x path length) whatever the pattern
  // ("*a*a*a*a*b" against a long path would be exponential by plain backtracking).
  std::vector<signed char> memo((tokens_.size() + 1) * (path.size() + 1), -1);
  return match_from(0, 0, path, memo);
}

bool Glob::match_from(size_t ti, size_t si, std::string_view s, std::vector<signed char>& memo) const noexcept {
  signed char& slot = memo[ti * (s.size() + 1) + si];
  if (slot >= 0) return slot != 0;
  bool result = false;
  if (ti == tokens_.size()) {
    result = si == s.size();
  } else {
    const Token& t = tokens_[ti];
    const bool more = si < s.size();
    switch (t.op) {
      case Op::literal:
        result = more && s[si] == t.ch && match_from(ti + 1, si + 1, s, memo);
        break;
      case Op::any_char:
        result = more && s[si] != '/' && match_from(ti + 1, si + 1, s, memo);
        break;
      case Op::set: {
        if (!more || s[si] == '/') break;
        bool in = false;
        for (size_t r = 0; r + 1 < t.ranges.size(); r += 2)
          if (s[si] >= t.ranges[r] && s[si] <= t.ranges[r + 1]) in = true;
        result = in != t.negate && match_from(ti + 1, si + 1, s, memo);
        break;
      }
      case Op::star:
        // Zero characters, or one non-'/' character and still in the star.
        result = match_from(ti + 1, si, s, memo) || (more && s[si] != '/' && match_from(ti, si + 1, s, memo));
        break;
      case Op::globstar:
        // Zero or more whole segments: stop here, or skip past the next '/'.
        // At the pattern's end it takes the rest of the path.
        if (ti + 1 == tokens_.size()) {
          result = true;
          break;
        }
        result = match_from(ti + 1, si, s, memo);
        for (size_t n = si; !result && n < s.size(); ++n)
          if (s[n] == '/') result = match_from(ti + 1, n + 1, s, memo);
        break;
    }
  }
  slot = result ? 1 : 0;
  return result;
}

}  // namespace memcg::config
