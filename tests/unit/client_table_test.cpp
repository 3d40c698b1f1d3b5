// The connection gate's policy: who may open a connection and who gets the
// next free worker.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "exporter/http/client_table.h"
#include "tests/unit/http_helpers.h"

namespace memcg::exporter {
namespace {

using testing::v4;

ClientKey v6(const char* a) {
  sockaddr_storage s{};
  auto& in = reinterpret_cast<sockaddr_in6&>(s);
  in.sin6_family = AF_INET6;
  inet_pton(AF_INET6, a, &in.sin6_addr);
  return client_key(s);
}

TEST(ClientKey, Ipv4MappedIsIpv4AndIpv6IsItsSlash64) {
  EXPECT_EQ(v6("::ffff:10.0.0.1"), v4("10.0.0.1"));
  EXPECT_NE(v4("10.0.0.1"), v4("10.0.0.2"));
  EXPECT_EQ(v6("2001:db8:1:2::1"), v6("2001:db8:1:2:ffff::9")) << "one host, one /64";
  EXPECT_NE(v6("2001:db8:1:2::1"), v6("2001:db8:1:3::1"));
  EXPECT_EQ(v4("10.0.0.1").str(), "10.0.0.1");
  EXPECT_EQ(v6("2001:db8:1:2::1").str(), "2001:db8:1:2::/64");
}

TEST(ClientTable, PerClientAndTotalLimitsRefuseAtOnce) {
  ClientTable t(40, 3, 8);
  const auto a = v4("10.0.0.1"), b = v4("10.0.0.2");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t.admit(a), Refusal::none);
  EXPECT_EQ(t.admit(a), Refusal::per_client);
  EXPECT_EQ(t.admit(b), Refusal::none);
  EXPECT_EQ(t.open(), 4u);
  EXPECT_EQ(t.open_of(a), 3u);
  t.release(a, 1);
  EXPECT_EQ(t.admit(a), Refusal::none) << "a closed connection frees its place";
  ClientTable full(10, 100, 8);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(full.admit(v4(("10.1.0." + std::to_string(i)).c_str())), Refusal::none);
  EXPECT_EQ(full.admit(v4("10.2.0.1")), Refusal::total);
}

// A small fd limit lowers the total; the per-client limit follows, so one
// client never holds it all (the issue: 16 open at most, 64 per client).
TEST(ClientTable, ThePerClientLimitScalesWithTheTotal) {
  EXPECT_EQ(ClientTable::per_client_limit(1024, 64), 64u);
  EXPECT_EQ(ClientTable::per_client_limit(16, 64), 2u);
  EXPECT_EQ(ClientTable::per_client_limit(5, 64), 1u);
  ClientTable t(16, 64, 8);
  const auto a = v4("10.0.0.1");
  EXPECT_EQ(t.admit(a), Refusal::none);
  EXPECT_EQ(t.admit(a), Refusal::none);
  EXPECT_EQ(t.admit(a), Refusal::per_client);
}

// Two busy clients cannot take every worker between them: the last free
// one waits for a client holding none.
TEST(ClientTable, TheLastWorkerIsForAClientHoldingNone) {
  ClientTable t(100, 100, 8);  // share 4
  const auto a = v4("10.0.0.1"), b = v4("10.0.0.2"), prom = v4("10.0.0.3");
  uint64_t id = 1;
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(t.admit(i % 2 ? b : a), Refusal::none);
    t.ready(i % 2 ? b : a, id++);
  }
  int given = 0;
  while (t.next()) ++given;
  EXPECT_EQ(given, 7) << "4 + 3: one worker stays free";
  ASSERT_EQ(t.admit(prom), Refusal::none);
  t.ready(prom, 100);
  EXPECT_EQ(t.next(), 100u);
  EXPECT_EQ(t.served(), 8u);
  // A worker that answered is free again; the connection stays open.
  t.finish(prom);
  EXPECT_EQ(t.served(), 7u);
  EXPECT_EQ(t.open_of(prom), 1u);
  EXPECT_EQ(t.next(), std::nullopt) << "a and b hold 4 and 3: the free worker is still kept";
}

TEST(ClientTable, OnlyReadyConnectionsGetWorkersAndNoClientMoreThanHalf) {
  // 4 workers: a client holds at most 2, so a flood from one leaves room.
  ClientTable t(100, 100, 4);
  const auto flood = v4("10.0.0.9"), prom = v4("10.0.0.1");
  for (uint64_t id = 1; id <= 10; ++id) {
    ASSERT_EQ(t.admit(flood), Refusal::none);
    t.ready(flood, id);
  }
  ASSERT_EQ(t.admit(prom), Refusal::none);  // connected, head not complete yet
  EXPECT_EQ(t.next(), 1u);
  EXPECT_EQ(t.next(), 2u);
  EXPECT_EQ(t.next(), std::nullopt) << "the flood holds its share; two workers stay free";
  t.ready(prom, 100);
  EXPECT_EQ(t.next(), 100u) << "the scrape gets a free worker at once";
  EXPECT_EQ(t.served(), 3u);
  t.finish(flood);
  t.release(flood, 1);
  EXPECT_EQ(t.next(), 3u);
  EXPECT_EQ(t.next(), std::nullopt);
}

TEST(ClientTable, WorkersGoToClientsInTurn) {
  ClientTable t(100, 100, 2);  // share 1
  const auto a = v4("10.0.0.1"), b = v4("10.0.0.2"), c = v4("10.0.0.3");
  uint64_t id = 1;
  for (const auto& k : {a, a, a, b, b, c}) {
    ASSERT_EQ(t.admit(k), Refusal::none);
    t.ready(k, id++);
  }
  std::vector<uint64_t> order;
  for (int round = 0; round < 6; ++round) {
    auto first = t.next();
    auto second = t.next();
    ASSERT_TRUE(first && second) << round;
    order.push_back(*first);
    order.push_back(*second);
    // Both finish; which client each belonged to follows from the ids.
    for (uint64_t done : {*first, *second}) {
      const ClientKey& k = done <= 3 ? a : done <= 5 ? b : c;
      t.finish(k);
      t.release(k, done);
    }
    if (order.size() == 6) break;
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 4, 6, 2, 5, 3})) << "a, b, c in turn, not a's three first";
}

TEST(ClientTable, AClosedWaitingConnectionLeavesTheQueue) {
  ClientTable t(100, 100, 1);
  const auto a = v4("10.0.0.1");
  for (uint64_t id = 1; id <= 2; ++id) {
    ASSERT_EQ(t.admit(a), Refusal::none);
    t.ready(a, id);
  }
  t.release(a, 1);
  EXPECT_EQ(t.next(), 2u);
  t.release(a, 2);
  EXPECT_EQ(t.open(), 0u);
  EXPECT_EQ(t.served(), 1u) << "its request is still at the worker";
  t.finish(a);
  EXPECT_EQ(t.served(), 0u);
  EXPECT_EQ(t.next(), std::nullopt);
}

TEST(ClientTable, AClientThatClosesAfterAskingStillHoldsItsWorkersUntilTheyAnswer) {
  ClientTable t(100, 100, 4);  // share 2
  const auto flood = v4("10.0.0.1");
  for (uint64_t id = 1; id <= 4; ++id) {
    ASSERT_EQ(t.admit(flood), Refusal::none);
    t.ready(flood, id);
  }
  EXPECT_EQ(t.next(), 1u);
  EXPECT_EQ(t.next(), 2u);
  t.release(flood, 1);  // closed at once, its handler still running
  t.release(flood, 2);
  EXPECT_EQ(t.next(), std::nullopt) << "the two handlers still run: the share is taken";
  t.finish(flood);
  EXPECT_EQ(t.next(), 3u);
}

}  // namespace
}  // namespace memcg::exporter
