#include "plugin/runtime/user_socket.h"

#include <charconv>

namespace memcg::runtime {

std::optional<uint32_t> user_instance_uid(std::string_view path) noexcept {
  std::optional<uint32_t> uid;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
    constexpr std::string_view prefix = "user@", suffix = ".service";
    if (part.size() <= prefix.size() + suffix.size() || !part.starts_with(prefix) || !part.ends_with(suffix)) continue;
    const std::string_view digits = part.substr(prefix.size(), part.size() - prefix.size() - suffix.size());
    uint32_t v = 0;
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (r.ec == std::errc{} && r.ptr == digits.data() + digits.size()) uid = v;  // innermost wins
  }
  return uid;
}

std::string user_socket(std::string_view pattern, uint32_t uid) {
  std::string out;
  out.reserve(pattern.size() + 8);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'U') {
      out += std::to_string(uid);
      ++i;
    } else if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == '%') {
      out += '%';
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

}  // namespace memcg::runtime
