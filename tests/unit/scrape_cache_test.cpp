// The /metrics body cache: one render and one compression per snapshot,
// whatever the number of (concurrent) scrapers; a new snapshot or
// configuration gets a new body; a superseded body is dropped.
#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "exporter/http/gzip.h"
#include "exporter/http/scrape_cache.h"
#include "tests/unit/http_helpers.h"
#include "plugin/snapshot.h"

namespace memcg::exporter {
namespace {

using testing::gunzip;

// A snapshot of `n` cgroups (ids and settings shared, as the collector's are).
Snapshot snapshot(size_t n, uint64_t pass) {
  Snapshot snap;
  snap.pass = pass;
  auto settings = std::make_shared<config::Settings>();
  for (size_t i = 0; i < n; ++i)
    snap.add_cgroup(std::make_shared<CgroupId>(CgroupId{"c" + std::to_string(i), i + 2, 1, {}}), settings);
  return snap;
}

// Renders "<head>" from the identities and "values <pass>" for the rest, counting calls.
struct Counting {
  std::atomic<int> identity{0}, values{0};
  ScrapeCache::Render render(const Snapshot& snap, std::chrono::milliseconds delay = {}) {
    return {[this, &snap, delay](std::string& out) {
              ++identity;
              std::this_thread::sleep_for(delay);
              for (const auto& c : snap.cgroups) out += "info{cgroup=\"" + c.id->path + "\"} 1\n";
            },
            [this, &snap](text::Buffer& out) {
              ++values;
              out.append("passes " + std::to_string(snap.pass) + "\n" + std::string(20000, 'v'));
            }};
  }
};

// The whole text a Render writes: its identity part, then its values.
std::string whole(const ScrapeCache::Render& r) {
  std::string text;
  r.identity(text);
  text::Buffer values;
  r.values(values);
  return text.append(values.view());
}

TEST(ScrapeCache, ConcurrentScrapersOfOneSnapshotShareOneRenderAndOneCompression) {
  ScrapeCache cache;
  const Snapshot snap = snapshot(100, 7);
  Counting n;
  const auto render = n.render(snap, std::chrono::milliseconds(20));  // others arrive while it renders
  // Prometheus servers ask for gzip: the cache keeps only the compressed
  // bytes for them, so a plain-text scraper of the same snapshot renders
  // once more (and then shares that text with the other plain ones).
  for (bool gzip : {true, false}) {
    std::vector<std::thread> threads;
    std::vector<ScrapeCache::Body> got(6);
    for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = cache.get(snap, {7, nullptr}, gzip, render); });
    for (auto& t : threads) t.join();
    for (const auto& b : got) {
      EXPECT_EQ(b.gzip, gzip);
      EXPECT_EQ(b.bytes, got[0].bytes) << "the same body object";
    }
    if (gzip) {
      EXPECT_LT(got[0].bytes->size(), 2000u);
      EXPECT_EQ(gunzip(*got[0].bytes), whole(render)) << "one gzip member: identity head + values";
    }
  }
  EXPECT_EQ(n.values.load(), 2 + 1);  // + the comparison text above
  EXPECT_EQ(cache.counts().renders, 2u);
  EXPECT_EQ(cache.counts().compressions, 1u);
}

TEST(ScrapeCache, TheIdentityHeadIsCompressedOnceWhileCgroupsRulesRecordsAndRemovalsStay) {
  ScrapeCache cache;
  Snapshot snap = snapshot(50, 1);
  Counting n;
  const auto z1 = cache.get(snap, {1, nullptr}, true, n.render(snap));
  snap.pass = 2;  // the next pass: same cgroups, new values
  const auto z2 = cache.get(snap, {2, nullptr}, true, n.render(snap));
  EXPECT_EQ(n.identity.load(), 1);
  EXPECT_EQ(n.values.load(), 2);
  EXPECT_EQ(cache.counts().heads_reused, 1u);
  EXPECT_EQ(gunzip(*z2.bytes), whole(n.render(snap)));
  n.identity = 0;

  // A cgroup gone, a rule changed, a container record or a reload: rendered
  // again. The collector publishes a new roster for the first two.
  snap.cgroups.pop_back();
  auto roster = std::make_shared<Roster>(*snap.roster);
  roster->ids.pop_back();
  roster->settings.pop_back();
  snap.roster = roster;
  snap.pass = 3;
  (void)cache.get(snap, {3, nullptr}, true, n.render(snap));
  EXPECT_EQ(n.identity.load(), 1);
  roster = std::make_shared<Roster>(*snap.roster);
  roster->settings[0] = std::make_shared<config::Settings>();
  snap.cgroups[0].settings = roster->settings[0].get();
  snap.roster = roster;
  snap.pass = 4;
  (void)cache.get(snap, {4, nullptr}, true, n.render(snap));
  EXPECT_EQ(n.identity.load(), 2);
  snap.records = std::make_shared<runtime::BoundRecords>();
  snap.pass = 5;
  (void)cache.get(snap, {5, nullptr}, true, n.render(snap));
  EXPECT_EQ(n.identity.load(), 3);
  const int reload = 0;
  snap.pass = 6;
  const auto z6 = cache.get(snap, {6, &reload}, true, n.render(snap));
  EXPECT_EQ(n.identity.load(), 4);
  EXPECT_EQ(gunzip(*z6.bytes), whole(n.render(snap)));
  // Removed cgroups' info is part of the head: one kept, then expired, with
  // the live cgroups as they were (the roster unchanged).
  n.identity = 0;
  snap.removed = std::make_shared<const std::vector<CgroupView>>(1, snap.cgroups.front());
  snap.pass = 7;
  (void)cache.get(snap, {7, &reload}, true, n.render(snap));
  EXPECT_EQ(n.identity.load(), 1);
  snap.removed.reset();
  snap.pass = 8;
  (void)cache.get(snap, {8, &reload}, true, n.render(snap));
  EXPECT_EQ(n.identity.load(), 2) << "an expired removal must not stay in a reused head";
}

TEST(ScrapeCache, NewSnapshotOrConfigurationRendersAgainAndOldBodiesAreDropped) {
  ScrapeCache cache;
  Snapshot snap = snapshot(1, 1);
  Counting n;
  const int config_a = 0, config_b = 0;
  EXPECT_EQ(*cache.get(snap, {1, &config_a}, false, n.render(snap)).bytes, *cache.get(snap, {1, &config_a}, false, n.render(snap)).bytes);
  EXPECT_EQ(n.values.load(), 1);
  (void)cache.get(snap, {1, &config_b}, false, n.render(snap));
  EXPECT_EQ(n.values.load(), 2) << "a reload changes the body";
  snap.pass = 2;
  (void)cache.get(snap, {2, &config_b}, false, n.render(snap));
  EXPECT_EQ(n.values.load(), 3) << "so does a new pass";
  cache.drop_before(2);
  (void)cache.get(snap, {2, &config_b}, false, n.render(snap));
  EXPECT_EQ(n.values.load(), 3) << "still the latest";
  cache.drop_before(3);
  (void)cache.get(snap, {2, &config_b}, false, n.render(snap));
  EXPECT_EQ(n.values.load(), 4) << "dropped, built again";
}

TEST(ScrapeCache, OnlyLargeBodiesAskForTheirPagesToBeReturned) {
  // A gzip scrape keeps its buffers for the next one (returned, they were
  // faulted in again every scrape); a text body is new every time.
  ScrapeCache cache;
  const Snapshot snap = snapshot(100, 1);
  Counting n;
  (void)cache.get(snap, {1, nullptr}, true, n.render(snap));
  EXPECT_FALSE(cache.take_trim_due());
  (void)cache.get(snap, {1, nullptr}, false, n.render(snap));
  EXPECT_TRUE(cache.take_trim_due());
  EXPECT_FALSE(cache.take_trim_due()) << "cleared by the call";
}

TEST(Gzip, RoundTripsThroughZlibAndHonoursQZero) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "memcg_memory_current_bytes{cgroup_id=\"" + std::to_string(i * 7919) + "\"} " + std::to_string(i * 104729) + "\n";
  std::string z = "prefix";
  ASSERT_TRUE(gzip_compress(text, z));
  ASSERT_EQ(z.compare(0, 6, "prefix"), 0) << "appends";
  z.erase(0, 6);
  EXPECT_EQ(static_cast<unsigned char>(z[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(z[1]), 0x8b);
  EXPECT_LT(z.size(), text.size() / 4);
  EXPECT_EQ(gunzip(z), text);
  // Incompressible input takes the second, larger buffer.
  std::string noise(300000, '\0');
  uint64_t x = 88172645463325252ull;
  for (auto& c : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  std::string zn;
  ASSERT_TRUE(gzip_compress(noise, zn));
  EXPECT_EQ(gunzip(zn), noise);
  // A reused head joined to a tail: one member, both parts, the CRC over all.
  DeflatedHead head;
  ASSERT_TRUE(deflate_head(text, head));
  std::string joined;
  DeflateWorkspace ws;
  ASSERT_TRUE(gzip_join(head, noise, joined, ws));
  EXPECT_EQ(gunzip(joined), text + noise);
  ASSERT_TRUE(gzip_join(head, "", joined = {}, ws));
  EXPECT_EQ(gunzip(joined), text);
  // One workspace for every tail, as the scrape cache keeps it: a smaller
  // tail after a larger one, the noise again after shrinking.
  for (const std::string* tail : {&noise, &text, &noise}) {
    ASSERT_TRUE(gzip_join(head, *tail, joined = {}, ws));
    EXPECT_EQ(gunzip(joined), text + *tail);
    ws.shrink(0);
  }
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, gzip;q=0.5"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("identity"));
}

}  // namespace
}  // namespace memcg::exporter
