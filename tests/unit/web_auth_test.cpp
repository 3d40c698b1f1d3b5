// The web config file's parser and HTTP basic auth against bcrypt hashes.
#include <gtest/gtest.h>

#include <crypt.h>

#include <chrono>
#include <string>

#include "exporter/basic_auth.h"
#include "exporter/web_config.h"

using namespace memcg::exporter;

namespace {

std::string bcrypt_hash(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt), nullptr);  // cost 4: fast tests
  crypt_data data{};
  return crypt_rn(password.c_str(), salt, &data, sizeof data);
}

std::string basic(const std::string& user_pass) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < user_pass.size(); i += 3) {
    auto byte = [&](size_t j) { return j < user_pass.size() ? static_cast<unsigned>(static_cast<unsigned char>(user_pass[j])) : 0u; };
    const unsigned n = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < user_pass.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < user_pass.size() ? kAlphabet[n & 63] : '=';
  }
  return "Basic " + out;
}

}  // namespace

TEST(Base64, DecodesAndRejects) {
  std::string out;
  EXPECT_TRUE(base64_decode("cHJvbTpzM2NyZXQ=", out));
  EXPECT_EQ(out, "prom:s3cret");
  EXPECT_TRUE(base64_decode("YQ==", out));
  EXPECT_EQ(out, "a");
  EXPECT_TRUE(base64_decode("", out));
  EXPECT_EQ(out, "");
  for (const char* bad : {"YQ=", "Y===", "YQ==YQ==", "Y!==", "=QQQ", "YQ=a"}) EXPECT_FALSE(base64_decode(bad, out)) << bad;
}

TEST(BasicAuth, AcceptsOnlyTheRightPassword) {
  BasicAuth auth({{"prom", bcrypt_hash("s3cret")}, {"alice", bcrypt_hash("pa:ss word")}});
  EXPECT_TRUE(auth.check(basic("prom:s3cret")));
  EXPECT_TRUE(auth.check(basic("prom:s3cret")));  // the second time from the cache
  EXPECT_TRUE(auth.check("basic " + basic("prom:s3cret").substr(6)));  // the scheme is case-insensitive
  EXPECT_TRUE(auth.check(basic("alice:pa:ss word")));  // the first ':' splits
  EXPECT_FALSE(auth.check(basic("prom:s3cret2")));
  EXPECT_FALSE(auth.check(basic("prom:")));
  EXPECT_FALSE(auth.check(basic("nobody:s3cret")));
  EXPECT_FALSE(auth.check(basic("alice:s3cret")));  // another user's password
  EXPECT_FALSE(auth.check(basic("prom")));
  EXPECT_FALSE(auth.check(""));
  EXPECT_FALSE(auth.check("Bearer abc"));
  EXPECT_FALSE(auth.check("Basic"));
  EXPECT_FALSE(auth.check("Basic !!!!"));
  EXPECT_FALSE(auth.check("Basic " + std::string(4000, 'A')));
  BasicAuth none({});
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.check(""));
}

TEST(WebConfig, ParsesTheFormat) {
  const std::string hash = bcrypt_hash("x");
  auto w = parse_web_config("basic_auth_users:\n  prom: " + hash +
                                "\nhttp_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n",
                            "web.yml");
  EXPECT_FALSE(w.tls);
  EXPECT_EQ(w.basic_auth_users.at("prom"), hash);
  ASSERT_EQ(w.headers.size(), 1u);
  EXPECT_EQ(w.headers[0].first, "X-Frame-Options");
  EXPECT_TRUE(parse_web_config("", "empty.yml").basic_auth_users.empty());
}

TEST(WebConfig, ErrorsCarryPosition) {
  auto error = [](const std::string& text) {
    try {
      parse_web_config(text, "web.yml");
    } catch (const WebConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("basic_auth_users:\n  prom: nope\n"),
            "web.yml:2:9: basic_auth_users.prom: not a bcrypt hash ($2a$, $2b$ or $2y$, e.g. from htpasswd -nBC 10)");
  EXPECT_EQ(error("tls_server_confg: {}\n"), "web.yml:1:1: tls_server_confg: unknown key");
  EXPECT_EQ(error("http_server_config:\n  headers:\n    X-A: \"a\\r\\nSet-Cookie: x\"\n"),
            "web.yml:3:5: http_server_config.headers.X-A: line breaks are not allowed");
  EXPECT_EQ(error("basic_auth_users:\n  \"a:b\": x\n").substr(0, 37), "web.yml:2:3: basic_auth_users: a user");
  EXPECT_NE(error("[1, 2").find("web.yml:"), std::string::npos);
  EXPECT_EQ(error("- a\n"), "web.yml:1:1: top level: expected a mapping");
}
