// gzip for HTTP responses (zlib; CivetWeb compresses only static files).
#pragma once

#include <string>
#include <string_view>

namespace memcg::exporter {

// Appends the gzip encoding of `in` to `out`. Returns false on a zlib error.
bool gzip_compress(std::string_view in, std::string& out, int level = 5);

// True when an Accept-Encoding header value allows gzip (q=0 refuses it).
bool accepts_gzip(std::string_view accept_encoding) noexcept;

}  // namespace memcg::exporter
