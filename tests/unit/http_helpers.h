// Helpers the HTTP-side unit tests share: reading a gzip body as clients do,
// and bcrypt hashes for basic auth.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <crypt.h>

#include <arpa/inet.h>

#include <string>
#include <string_view>

#include "exporter/http/client_table.h"

namespace memcg::testing {

// The client an IPv4 address is to the gate's limits.
inline exporter::ClientKey v4(const char* a) {
  sockaddr_storage s{};
  auto& in = reinterpret_cast<sockaddr_in&>(s);
  in.sin_family = AF_INET;
  ::inet_pton(AF_INET, a, &in.sin_addr);
  return exporter::client_key(s);
}

// zlib's inflate, as Go's and curl's readers do it: one gzip member, and
// nothing after it.
inline std::string gunzip(std::string_view z) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  std::string out(4 << 20, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data()));
  zs.avail_in = static_cast<uInt>(z.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
  EXPECT_EQ(zs.avail_in, 0u) << "nothing after the member";
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

// A bcrypt hash of `password` at cost 4 (fast tests).
inline std::string bcrypt_hash(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  return crypt_rn(password.c_str(), salt, &data, sizeof data);
}

}  // namespace memcg::testing
