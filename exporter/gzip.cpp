#include "exporter/gzip.h"

#include <zlib.h>

#include <cctype>

namespace memcg::exporter {

bool gzip_compress(std::string_view in, std::string& out, int level) {
  z_stream zs{};
  // windowBits 15 + 16 selects the gzip wrapper.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  const size_t start = out.size();
  out.resize(start + deflateBound(&zs, static_cast<uLong>(in.size())));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data() + start);
  zs.avail_out = static_cast<uInt>(out.size() - start);
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(start + zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END;
}

bool accepts_gzip(std::string_view h) noexcept {
  while (!h.empty()) {
    const size_t comma = h.find(',');
    std::string_view item = h.substr(0, comma);
    h = comma == std::string_view::npos ? std::string_view{} : h.substr(comma + 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    const size_t semi = item.find(';');
    std::string_view coding = item.substr(0, semi);
    while (!coding.empty() && std::isspace(static_cast<unsigned char>(coding.back()))) coding.remove_suffix(1);
    if (coding != "gzip" && coding != "*") continue;
    if (semi == std::string_view::npos) return true;
    std::string_view params = item.substr(semi + 1);
    const size_t q = params.find("q=");
    if (q == std::string_view::npos) return true;
    std::string_view v = params.substr(q + 2);
    // q=0, q=0.0, q=0.000 refuse; anything else accepts.
    bool zero = !v.empty() && v.front() == '0';
    for (size_t i = 1; zero && i < v.size() && v[i] != ';' && !std::isspace(static_cast<unsigned char>(v[i])); ++i)
      zero = v[i] == '.' || v[i] == '0';
    return !zero;
  }
  return false;
}

}  // namespace memcg::exporter
