#include "plugin/runtime/identity.h"

#include <array>

#include "plugin/runtime/recognizers.h"

namespace memcg::runtime {
namespace {

// Order matters where layouts overlap: the monitors (conmon) are rejected by
// their own recognisers before the generic systemd one names them as units.
constexpr std::array<Recognizer, 7> kChain{
    recognize_docker, recognize_containerd, recognize_crio, recognize_podman,
    recognize_nspawn, recognize_kubepods_cgroupfs, recognize_systemd_unit,
};

bool is_unit(std::string_view s) {
  return s.ends_with(".service") || s.ends_with(".scope") || s.ends_with(".slice");
}

}  // namespace

bool is_container_id(std::string_view s) noexcept {
  if (s.size() < 12 || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool strip_id(std::string_view s, std::string_view prefix, std::string_view suffix, std::string& out) {
  if (!s.starts_with(prefix) || !s.ends_with(suffix) || s.size() < prefix.size() + suffix.size()) return false;
  std::string_view id = s.substr(prefix.size(), s.size() - prefix.size() - suffix.size());
  if (!is_container_id(id)) return false;
  out = std::string(id);
  return true;
}

std::string unescape_unit(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x' && hex(s[i + 2]) >= 0 && hex(s[i + 3]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 2]) * 16 + hex(s[i + 3])));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string canonical_uuid(std::string_view s) {
  if (s.size() != 36) return {};
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    char& c = out[i];
    const bool dash_pos = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_pos) {
      if (c != '-' && c != '_') return {};
      c = '-';
    } else {
      if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return {};
    }
  }
  return out;
}

Identity identify(std::string_view path) {
  Identity id;
  if (path == "/" || path.empty()) {
    id.runtime = "raw";
    return id;
  }
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= path.size();) {
    const size_t slash = path.find('/', start);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  if (parts.empty()) {  // only slashes: the root again (found by fuzzing)
    id.runtime = "raw";
    return id;
  }
  const PathView view{parts};
  kubernetes_context(view, id);
  if (is_unit(view.leaf())) id.unit = unescape_unit(view.leaf());
  for (Recognizer r : kChain)
    if (r(view, id)) return id;
  id.runtime = "raw";
  return id;
}

}  // namespace memcg::runtime
