// Globs over cgroup paths relative to the cgroup2 root ("system.slice/foo.service";
// the root itself is "/"). Syntax:
//   *      any run of characters except '/'
//   **     as a whole path segment: zero or more segments ("a/**/b" matches "a/b")
//   ?      one character except '/'
//   [abc] [a-z] [!x]   one character from (or not from) the set
//   \c     the character c literally
// Compiled once (so a bad glob is a config error, not a silent non-match).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memcg::config {

class Glob {
 public:
  // Returns nullopt and sets `error` on a malformed pattern.
  static std::optional<Glob> compile(std::string_view pattern, std::string* error);

  bool matches(std::string_view path) const noexcept;
  const std::string& pattern() const noexcept { return pattern_; }

 private:
  enum class Op : unsigned char { literal, any_char, star, globstar, set };
  struct Token {
    Op op;
    char ch = 0;          // literal
    bool negate = false;  // set
    std::string ranges;   // set: pairs lo,hi
  };
  bool match_from(size_t ti, size_t si, std::string_view s, std::vector<signed char>& memo) const noexcept;
  // The character set opening at pattern[i] ('['): its token, with i left at
  // its closing ']'; an empty string, or why the set is invalid.
  static std::string parse_set(std::string_view pattern, size_t& i, Token& t);

  std::string pattern_;
  std::vector<Token> tokens_;
};

}  // namespace memcg::config
