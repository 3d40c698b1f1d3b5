// What the web front may hold for clients: the response budget's decisions
// (response_budget.h) and the ClientHello check that runs before OpenSSL
// reserves anything (tls_server.h).
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <string>

#include "exporter/http/response_budget.h"
#include "tests/unit/http_helpers.h"
#include "exporter/http/tls_server.h"

namespace memcg::exporter {
namespace {

using testing::v4;

constexpr size_t kMB = 1u << 20;

TEST(ResponseBudget, ASharedBodyIsHeldOnceButCountsWholeForEachConnectionOfItsClient) {
  ResponseBudget b(48 * kMB, 0);
  const std::string body(3 * kMB, 'x');
  const auto a = v4("10.0.0.1"), c = v4("10.0.0.2");
  b.hold(1, a, &body, 100);
  b.hold(2, a, &body, 100);
  b.hold(3, c, &body, 100);
  EXPECT_EQ(b.held(), 3 * kMB + 300) << "one allocation, three heads";
  EXPECT_EQ(b.held_by(a), 6 * kMB + 200);
  EXPECT_EQ(b.held_by(c), 3 * kMB + 100);
  b.release(1);
  b.release(2);
  b.release(3);
  EXPECT_EQ(b.held(), 0u);
  EXPECT_EQ(b.held_by(a), 0u);
}

TEST(ResponseBudget, AClientHoldingNothingIsAlwaysServedAndABacklogWaitsAtItsShare) {
  ResponseBudget b(48 * kMB, 128 << 10);
  const auto flood = v4("10.0.0.1"), prom = v4("10.0.0.9");
  // The flood's unread responses, each of a different snapshot.
  std::vector<std::string> bodies(20, std::string(4 * kMB, 'x'));
  uint64_t id = 1;
  while (b.may_start(flood)) b.hold(id, flood, &bodies[id - 1], 200), ++id;
  EXPECT_EQ(id - 1, 12u) << "48 MiB of 4 MiB bodies and their send buffers";
  EXPECT_TRUE(b.may_start(prom)) << "over the budget, a client holding nothing still gets its scrape";
  b.hold(100, prom, &bodies[19], 200);
  EXPECT_FALSE(b.may_start(prom)) << "but not a second one while the total is over";
  EXPECT_EQ(b.share(), 24 * kMB) << "two clients hold: half each";
  b.release(1);
  EXPECT_FALSE(b.may_start(flood)) << "still over its half";
  b.release(100);
  EXPECT_TRUE(b.may_start(prom));
}

TEST(ResponseBudget, HoldingAgainReplacesWhatAConnectionHeld) {
  ResponseBudget b(48 * kMB, 0);
  const std::string one(kMB, 'x'), two(2 * kMB, 'y');
  const auto a = v4("10.0.0.1");
  b.hold(1, a, &one, 10);
  b.hold(1, a, &two, 20);
  EXPECT_EQ(b.held(), 2 * kMB + 20);
  b.hold(1, a, nullptr, 30);  // a refusal from the gate: a head and no body
  EXPECT_EQ(b.held(), 30u);
  b.release(1);
  b.release(1);
  EXPECT_EQ(b.held(), 0u);
}

std::string hello(unsigned type, unsigned hs_type, size_t announced) {
  std::string h{static_cast<char>(type), 3, 1, 0x40, 0, static_cast<char>(hs_type)};
  h += static_cast<char>(announced >> 16);
  h += static_cast<char>(announced >> 8 & 0xff);
  h += static_cast<char>(announced & 0xff);
  return h;
}

HelloVerdict verdict(const std::string& s) {
  return client_hello_verdict(reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

TEST(ClientHello, AnnouncedLengthIsCheckedBeforeOpenSslReadsIt) {
  EXPECT_EQ(verdict(hello(22, 1, 512)), HelloVerdict::ok);
  EXPECT_EQ(verdict(hello(22, 1, kMaxClientHello)), HelloVerdict::ok);
  EXPECT_EQ(verdict(hello(22, 1, kMaxClientHello + 1)), HelloVerdict::refuse);
  EXPECT_EQ(verdict(hello(22, 1, 131000)), HelloVerdict::refuse);
  EXPECT_EQ(verdict(hello(22, 1, 131000).substr(0, 5)), HelloVerdict::more) << "the header in parts: wait";
  EXPECT_EQ(verdict(""), HelloVerdict::more);
  EXPECT_EQ(verdict(hello(22, 2, 512)), HelloVerdict::refuse) << "a ServerHello from a client";
  EXPECT_EQ(verdict(hello(22, 2, 512).substr(0, 6)), HelloVerdict::refuse);
  EXPECT_EQ(verdict("GET / HTTP/1.1\r\n"), HelloVerdict::refuse) << "plain HTTP to a TLS port";
  EXPECT_EQ(verdict(std::string("\x80\x2e\x01\x03\x01", 5)), HelloVerdict::refuse) << "SSLv2's format";
}

}  // namespace
}  // namespace memcg::exporter
