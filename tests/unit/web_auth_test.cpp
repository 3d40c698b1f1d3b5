// The web config file's parser and HTTP basic auth against bcrypt hashes.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <crypt.h>

#include <chrono>
#include <string>

#include "exporter/http/basic_auth.h"
#include "exporter/http/web_config.h"
#include "tests/unit/http_helpers.h"

using namespace memcg::exporter;
using memcg::testing::bcrypt_hash;

namespace {

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
  EXPECT_EQ(auth.check(basic("prom:s3cret")), BasicAuth::Result::ok);
  EXPECT_EQ(auth.check(basic("prom:s3cret")), BasicAuth::Result::ok);  // the second time from the cache
  EXPECT_EQ(auth.check("basic " + basic("prom:s3cret").substr(6)), BasicAuth::Result::ok);  // the scheme is case-insensitive
  EXPECT_EQ(auth.check(basic("alice:pa:ss word")), BasicAuth::Result::ok);  // the first ':' splits
  EXPECT_EQ(auth.check(basic("prom:s3cret2")), BasicAuth::Result::denied);
  EXPECT_EQ(auth.check(basic("prom:")), BasicAuth::Result::denied);
  EXPECT_EQ(auth.check(basic("nobody:s3cret")), BasicAuth::Result::denied);
  EXPECT_EQ(auth.check(basic("alice:s3cret")), BasicAuth::Result::denied);  // another user's password
  EXPECT_EQ(auth.check(basic("prom")), BasicAuth::Result::denied);
  EXPECT_EQ(auth.check(""), BasicAuth::Result::denied);
  EXPECT_EQ(auth.check("Bearer abc"), BasicAuth::Result::denied);
  EXPECT_EQ(auth.check("Basic"), BasicAuth::Result::denied);
  EXPECT_EQ(auth.check("Basic !!!!"), BasicAuth::Result::denied);
  EXPECT_EQ(auth.check("Basic " + std::string(4000, 'A')), BasicAuth::Result::denied);
  BasicAuth none({});
  EXPECT_FALSE(none.enabled());
  EXPECT_EQ(none.check(""), BasicAuth::Result::ok);
}

// A flood of unknown credentials takes the bcrypt slots; a client verified
// before is answered from the cache without waiting, and a further unknown
// one gets "busy" at once instead of queueing.
TEST(BasicAuth, AFloodCannotStarveVerifiedClientsAndNeverQueues) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  ASSERT_NE(crypt_gensalt_rn("$2b$", 13, nullptr, 0, salt, sizeof salt), nullptr);  // ~0.5-1 s per check
  crypt_data data{};
  const std::string slow = crypt_rn("slow", salt, &data, sizeof data);
  BasicAuth auth({{"prom", bcrypt_hash("s3cret")}, {"slow", slow}});
  ASSERT_EQ(auth.check(basic("prom:s3cret")), BasicAuth::Result::ok);  // verified once: cached
  std::vector<std::thread> flood;
  for (int i = 0; i < BasicAuth::kMaxVerifying; ++i)
    flood.emplace_back([&] { (void)auth.check(basic("slow:wrong")); });
  while (auth.verifying() < BasicAuth::kMaxVerifying) std::this_thread::yield();
  // Both slots are busy with cost-13 hashes now.
  EXPECT_EQ(auth.check(basic("prom:s3cret")), BasicAuth::Result::ok);
  EXPECT_EQ(auth.verifying(), BasicAuth::kMaxVerifying) << "answered while the flood was still hashing";
  EXPECT_EQ(auth.check(basic("prom:other")), BasicAuth::Result::busy);
  EXPECT_EQ(auth.check(basic("nobody:x")), BasicAuth::Result::busy);
  for (auto& t : flood) t.join();
  EXPECT_EQ(auth.verifying(), 0);
  EXPECT_EQ(auth.check(basic("prom:other")), BasicAuth::Result::denied);
}

// Unknown users are checked against a hash of the configured cost, so the
// time a wrong answer takes does not tell whether the user exists.
// A failed check of a cheap user's password is padded to the time of a
// check at the slowest configured cost (the unknown users' dummy hash): a
// user whose cost differs from the rest was told apart by timing.
TEST(BasicAuth, FailedChecksArePaddedToTheSlowestCost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  ASSERT_NE(crypt_gensalt_rn("$2b$", 8, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  const std::string eight = crypt_rn("x", salt, &data, sizeof data);
  std::vector<std::chrono::nanoseconds> pads;
  int slots_while_padding = -1;
  BasicAuth* self = nullptr;
  BasicAuth auth({{"cheap", bcrypt_hash("s3cret")}, {"dear", eight}}, [&](std::chrono::nanoseconds d) {
    pads.push_back(d);
    slots_while_padding = self->verifying();
  });
  self = &auth;
  EXPECT_EQ(auth.dummy_cost(), 8);
  ASSERT_GT(auth.slowest().count(), 0);
  EXPECT_EQ(auth.check(basic("cheap:wrong")), BasicAuth::Result::denied);
  ASSERT_EQ(pads.size(), 1u) << "the cheap user's failure is padded";
  EXPECT_GT(pads[0].count(), 0);
  EXPECT_LE(pads[0], auth.slowest());
  EXPECT_EQ(slots_while_padding, 1) << "the padding holds its bcrypt slot: floods stay within kMaxVerifying";
  EXPECT_EQ(auth.verifying(), 0);
  EXPECT_EQ(auth.check(basic("dear:wrong")), BasicAuth::Result::denied);
  EXPECT_EQ(auth.check(basic("nobody:wrong")), BasicAuth::Result::denied);
  EXPECT_EQ(pads.size(), 1u) << "checks at the slowest cost need none";
  EXPECT_EQ(auth.check(basic("cheap:s3cret")), BasicAuth::Result::ok);
  EXPECT_EQ(pads.size(), 1u) << "a success is not padded";
}

// A reload keeps what was verified for users whose hash did not change.
TEST(BasicAuth, AReloadKeepsVerifiedCredentials) {
  const std::string hash = bcrypt_hash("s3cret");
  BasicAuth old({{"prom", hash}});
  ASSERT_EQ(old.check(basic("prom:s3cret")), BasicAuth::Result::ok);
  BasicAuth next({{"prom", hash}, {"new", bcrypt_hash("x")}});
  next.keep_verified(old);
  EXPECT_EQ(next.check(basic("prom:s3cret")), BasicAuth::Result::ok);
  EXPECT_EQ(next.bcrypt_runs(), 0u) << "no bcrypt for a credential verified before the reload";
  BasicAuth changed({{"prom", bcrypt_hash("s3cret")}});
  changed.keep_verified(old);
  EXPECT_EQ(changed.check(basic("prom:s3cret")), BasicAuth::Result::ok);
  EXPECT_EQ(changed.bcrypt_runs(), 1u) << "verified again against the new hash";
  EXPECT_EQ(changed.check(basic("prom:wrong")), BasicAuth::Result::denied);
}

TEST(BasicAuth, TheDummyHashHasTheCostOfTheConfiguredHashes) {
  EXPECT_EQ(BasicAuth({{"a", bcrypt_hash("x")}, {"b", bcrypt_hash("y")}}).dummy_cost(), 4);
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  ASSERT_NE(crypt_gensalt_rn("$2b$", 5, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  const std::string five = crypt_rn("z", salt, &data, sizeof data);
  EXPECT_EQ(BasicAuth({{"a", five}}).dummy_cost(), 5);
  EXPECT_EQ(BasicAuth({{"a", five}, {"b", bcrypt_hash("x")}, {"c", bcrypt_hash("y")}}).dummy_cost(), 5) << "the slowest";
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
