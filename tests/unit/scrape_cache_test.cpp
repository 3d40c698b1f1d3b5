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
#include "exporter/http/stable_families.h"
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
            [this, &snap](text::Buffer& out, std::vector<size_t>&) {
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
  std::vector<size_t> starts;
  r.values(values, starts);
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

// Three value families and an empty one; `b` changes every pass, `a` when asked.
struct Families {
  int a = 1;
  ScrapeCache::Render render(const Snapshot& snap) {
    return {[](std::string& out) { out += "# HELP info i\n# TYPE info gauge\ninfo 1\n"; },
            [this, &snap](text::Buffer& out, std::vector<size_t>& starts) {
              const auto family = [&](const std::string& text) {
                starts.push_back(out.size());
                out.append(text);
              };
              family("# HELP a A\n# TYPE a gauge\na " + std::to_string(a) + "\n" + std::string(3000, 'a') + "\n");
              family("");  // a family without samples
              family("# HELP b B\n# TYPE b gauge\nb " + std::to_string(snap.pass) + "\n");
              family("# HELP c C\n# TYPE c gauge\nc 0\n" + std::string(3000, 'c') + "\n");
            }};
  }
  std::string a_text() const { return "# HELP a A\n# TYPE a gauge\na " + std::to_string(a) + "\n" + std::string(3000, 'a') + "\n"; }
  static std::string b_text(uint64_t pass) { return "# HELP b B\n# TYPE b gauge\nb " + std::to_string(pass) + "\n"; }
  static std::string c_text() { return "# HELP c C\n# TYPE c gauge\nc 0\n" + std::string(3000, 'c') + "\n"; }
};

TEST(ScrapeCache, FamiliesUnchangedAtTwoScrapesInARowKeepTheirCompressedBytesAndComeFirst) {
  ScrapeCache cache;
  Snapshot snap = snapshot(3, 1);
  Families f;
  const std::string info = "# HELP info i\n# TYPE info gauge\ninfo 1\n";
  // Nothing to compare with, then each family seen once unchanged: all in
  // the rendered order, compressed together.
  for (uint64_t pass : {uint64_t{1}, uint64_t{2}}) {
    snap.pass = pass;
    const auto z = cache.get(snap, {pass, nullptr}, true, f.render(snap));
    EXPECT_EQ(gunzip(*z.bytes), info + f.a_text() + Families::b_text(pass) + Families::c_text());
  }
  EXPECT_EQ(cache.counts().families_reused, 0u);
  // a and c unchanged twice in a row: compressed apart once, then reused,
  // ahead of b, which changes every pass.
  for (uint64_t pass : {uint64_t{3}, uint64_t{4}}) {
    snap.pass = pass;
    const auto z = cache.get(snap, {pass, nullptr}, true, f.render(snap));
    EXPECT_EQ(gunzip(*z.bytes), info + f.a_text() + Families::c_text() + Families::b_text(pass));
  }
  EXPECT_EQ(cache.counts().families_reused, 4u);
  EXPECT_EQ(cache.counts().families_compressed, 2u);
  // a changed: back in the tail, after c; its old bytes are not served.
  f.a = 22;
  snap.pass = 5;
  const auto z = cache.get(snap, {5, nullptr}, true, f.render(snap));
  EXPECT_EQ(gunzip(*z.bytes), info + Families::c_text() + f.a_text() + Families::b_text(5));
  EXPECT_EQ(cache.counts().families_reused, 5u);
  // The plain text keeps the rendered order.
  snap.pass = 6;
  const auto plain = cache.get(snap, {6, nullptr}, false, f.render(snap));
  EXPECT_EQ(*plain.bytes, info + f.a_text() + Families::b_text(6) + Families::c_text());
}

TEST(StableFamilies, TextOutsideAFamilyIsNeverReusedAndComesFirstInTheTail) {
  StableFamilies families;
  const std::string text = "lead\n# HELP x X\nx 1\nnot a family\n# HELP y Y\ny 2\n";
  const size_t x = text.find("# HELP x"), odd = text.find("not a"), y = text.find("# HELP y");
  const std::vector<size_t> starts = {x, odd, y};
  EXPECT_EQ(families.split(text, starts).tail, text);
  EXPECT_EQ(families.split(text, starts).tail, text) << "unchanged once: not yet apart";
  const auto& again = families.split(text, starts);
  ASSERT_EQ(again.parts.size(), 2u) << "x and y";
  EXPECT_EQ(again.tail, "lead\nnot a family\n");
  EXPECT_EQ(again.reused_bytes, text.size() - again.tail.size());
  // Offsets that would drop bytes (out of order, past the end): all in the tail.
  const std::vector<size_t> unordered = {y, x}, past = {x, text.size() + 1};
  EXPECT_EQ(families.split(text, unordered).tail, text);
  EXPECT_TRUE(families.split(text, past).parts.empty());
}

// A family of `lines` samples (about 20 bytes each) of `type`, whose sample
// `moving` reads `value`, then a small gauge that changes every scrape.
struct OneMovingLine {
  std::string type = "gauge";
  size_t lines = 2000, moving = 700;
  std::string text(uint64_t value, std::vector<size_t>& starts) const {
    std::string t = "# HELP g G\n# TYPE g " + type + "\n";
    for (size_t i = 0; i < lines; ++i) t += "g{i=\"" + std::to_string(i) + "\"} " + std::to_string(i == moving ? value : i) + "\n";
    starts = {0, t.size()};
    return t + "# HELP h H\n# TYPE h gauge\nh " + std::to_string(value) + "\n";
  }
};

// The body the split makes, as a reader gets it.
std::string served(const StableFamilies::Split& split) {
  DeflateWorkspace ws;
  std::string z;
  EXPECT_TRUE(gzip_join(split.parts, split.tail, z, ws));
  return gunzip(z);
}

TEST(StableFamilies, TheLargestChangedGaugeFamilyIsTakenApartByRunsOfLines) {
  StableFamilies families;
  OneMovingLine g;
  std::vector<size_t> starts;
  for (uint64_t scrape = 1; scrape <= 2; ++scrape) {
    const std::string text = g.text(scrape, starts);
    EXPECT_EQ(families.split(text, starts).tail, text) << "no run repeated twice yet";
  }
  const std::string text = g.text(3, starts);
  const auto& split = families.split(text, starts);
  // 2,000 samples in runs of 64: 32 runs and the header, one run changed.
  EXPECT_EQ(split.runs_reused, 32u);
  EXPECT_EQ(split.runs_built, 32u);
  EXPECT_EQ(split.families_reused, 0u);
  const std::string moved = "g{i=\"700\"} 3\n";
  const size_t run = 700 / 64;
  std::string changed_run;
  for (size_t i = run * 64; i < run * 64 + 64; ++i) changed_run += i == 700 ? moved : "g{i=\"" + std::to_string(i) + "\"} " + std::to_string(i) + "\n";
  EXPECT_EQ(split.tail, changed_run + "# HELP h H\n# TYPE h gauge\nh 3\n") << "the changed run opens the tail";
  EXPECT_EQ(split.reused_bytes + split.tail.size(), text.size());
  // The body: the header, the unchanged runs in order, the changed run, then h.
  std::string expect = text.substr(0, starts[1]);
  const size_t from = expect.find("g{i=\"" + std::to_string(run * 64) + "\"}");
  const size_t to = expect.find("g{i=\"" + std::to_string(run * 64 + 64) + "\"}");
  expect = expect.substr(0, from) + expect.substr(to) + changed_run + "# HELP h H\n# TYPE h gauge\nh 3\n";
  EXPECT_EQ(served(split), expect);
  // Scrape after scrape, only the changed run is compressed again.
  const auto& next = families.split(g.text(4, starts), starts);
  EXPECT_EQ(next.runs_reused, 32u);
  EXPECT_EQ(next.runs_built, 0u);
}

TEST(StableFamilies, SmallFamiliesAndHistogramsStayWhole) {
  for (const auto& [type, lines] : {std::pair<std::string, size_t>{"histogram", 2000}, {"gauge", 500}}) {
    StableFamilies families;
    OneMovingLine g{.type = type, .lines = lines, .moving = 300};
    std::vector<size_t> starts;
    for (uint64_t scrape = 1; scrape <= 4; ++scrape) {
      const std::string text = g.text(scrape, starts);
      const auto& split = families.split(text, starts);
      EXPECT_EQ(split.tail, text) << type << " of " << lines << " lines: its lines in the order rendered";
      EXPECT_EQ(split.runs_reused, 0u);
    }
  }
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
  DeflatedPart head;
  ASSERT_TRUE(deflate_part(text, head));
  const DeflatedPart* just_head[] = {&head};
  std::string joined;
  DeflateWorkspace ws;
  ASSERT_TRUE(gzip_join(just_head, noise, joined, ws));
  EXPECT_EQ(gunzip(joined), text + noise);
  ASSERT_TRUE(gzip_join(just_head, "", joined = {}, ws));
  EXPECT_EQ(gunzip(joined), text);
  // One workspace for every tail, as the scrape cache keeps it: a smaller
  // tail after a larger one, the noise again after shrinking.
  for (const std::string* tail : {&noise, &text, &noise}) {
    ASSERT_TRUE(gzip_join(just_head, *tail, joined = {}, ws));
    EXPECT_EQ(gunzip(joined), text + *tail);
    ws.shrink(0);
  }
  // Several parts, an empty one among them: their CRCs combined, then the tail's.
  DeflatedPart second, empty;
  ASSERT_TRUE(deflate_part(noise, second));
  ASSERT_TRUE(deflate_part("", empty));
  const DeflatedPart* three[] = {&head, &empty, &second};
  ASSERT_TRUE(gzip_join(three, text, joined = {}, ws));
  EXPECT_EQ(gunzip(joined), text + noise + text);
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, gzip;q=0.5"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("identity"));
}

}  // namespace
}  // namespace memcg::exporter
