#include "plugin/runtime/bounded_json.h"

#include "plugin/utf8.h"

namespace memcg::runtime {

bool json_depth_ok(std::string_view s) noexcept {
  int depth = 0;
  bool in_string = false, escape = false;
  for (char c : s) {
    if (in_string) {
      if (escape) escape = false;
      else if (c == '\\') escape = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if ((c == '{' || c == '[') && ++depth > kMaxJsonDepth) return false;
    else if (c == '}' || c == ']') --depth;
  }
  return true;
}

std::optional<nlohmann::json> parse_bounded_object(std::string_view s, size_t max, const char* what,
                                                   std::string& error) {
  if (s.size() > max) {
    error = std::string(what) + " larger than " + std::to_string(max) + " bytes";
    return std::nullopt;
  }
  if (!json_depth_ok(s)) {
    error = std::string(what) + " nested deeper than " + std::to_string(kMaxJsonDepth);
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(s.begin(), s.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = std::string(what) + " is not a JSON object";
    return std::nullopt;
  }
  return j;
}

std::string clean_value(std::string_view v, size_t max) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    const size_t len = utf8_sequence_length(v, i);
    if (len == 0) {
      ++i;
      continue;
    }
    const auto c = static_cast<unsigned char>(v[i]);
    if (len > 1 || (c >= 0x20 && c != 0x7f)) {
      if (out.size() + len > max) break;
      out.append(v.substr(i, len));
    }
    i += len;
  }
  return out;
}

std::string json_string(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace memcg::runtime
