// Snapshots on demand (plugin/publication.h): the daemon's passes owe their
// state to the next reader instead of copying every cgroup into a snapshot
// each pass, and a reader always gets the state of the last pass (or, when
// the pass thread does not answer in time, the last snapshot built).
#include <gtest/gtest.h>
#include <poll.h>

#include <future>

#include "config/config.h"
#include "plugin/collector.h"
#include "plugin/publication.h"
#include "tests/fixtures/fake_poller.h"
#include "tests/fixtures/tree.h"

namespace memcg {
namespace {

using namespace std::chrono_literals;

class PublicationTest : public ::testing::Test {
 protected:
  PublicationTest() {
    tree.add("pods", spec(20 << 20));
    tree.add("pods/c1", spec(8 << 20));
    cfg = config::Config::builtin({4096, 1});
    cfg.collector.rescan_interval = 1h;
    cfg.resolve();
  }
  static fixtures::CgroupSpec spec(uint64_t current) {
    fixtures::CgroupSpec s;
    s.current = current;
    s.stat.set("anon", current);
    return s;
  }
  std::unique_ptr<Collector> make() {
    auto c = std::make_unique<Collector>(tree.root(), cfg, clock);
    auto p = std::make_unique<fixtures::FakePoller>();
    poller = p.get();
    c->set_event_poller(std::move(p));
    EXPECT_TRUE(c->publish_on_demand());
    return c;
  }
  void pass(Collector& c) {
    clock.advance(1s);
    c.run_pass();
  }
  static bool asked(const Collector& c, int timeout_ms = 0) {
    pollfd p{c.wanted_fd(), POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) == 1;
  }
  static uint64_t current_of(const Snapshot& s, const std::string& path) {
    for (const auto& v : s.cgroups)
      if (v.id->path == path) return v.probe.current.value_or(0);
    return 0;
  }

  fixtures::Tree tree;
  config::Config cfg;
  ManualClock clock;
  fixtures::FakePoller* poller = nullptr;
};

TEST_F(PublicationTest, PassesOweTheirStateAndAReaderBetweenPassesGetsItBuiltOnce) {
  auto c = make();
  pass(*c);
  const auto first = c->latest();
  EXPECT_EQ(first->pass, 1u) << "the first pass is always published: readiness waits for it";
  for (int i = 0; i < 4; ++i) pass(*c);
  tree.set_current("pods/c1", 9 << 20);
  pass(*c);
  EXPECT_EQ(c->latest(), first) << "six passes, no reader: one snapshot";
  EXPECT_FALSE(asked(*c));

  auto reader = std::async(std::launch::async, [&] { return c->current(10s); });
  ASSERT_TRUE(asked(*c, 5000)) << "the reader's ask wakes the pass thread";
  c->serve_wanted();
  const auto got = reader.get();
  EXPECT_EQ(got->pass, 6u);
  EXPECT_EQ(got->publication, first->publication + 1) << "one build for the reader";
  EXPECT_EQ(current_of(*got, "pods/c1"), 9u << 20) << "the last pass's values";
  EXPECT_EQ(c->current(10s), got) << "nothing owed since: no build, no wait";
  c->serve_wanted();  // a spurious wake-up builds nothing
  EXPECT_EQ(c->latest(), got);
}

TEST_F(PublicationTest, AReaderDuringAPassIsServedAtItsEnd) {
  auto c = make();
  pass(*c);
  pass(*c);  // owed
  auto reader = std::async(std::launch::async, [&] { return c->current(10s); });
  ASSERT_TRUE(asked(*c, 5000));
  pass(*c);  // the reader asked before this pass ended: its end builds
  const auto got = reader.get();
  EXPECT_EQ(got->pass, 3u);
  c->serve_wanted();  // the wake-up left behind
  EXPECT_EQ(c->latest(), got) << "builds nothing";
}

TEST_F(PublicationTest, APassThreadThatDoesNotAnswerCostsTheReaderItsPatienceThenTheLastSnapshot) {
  auto c = make();
  pass(*c);
  pass(*c);
  const auto got = c->current(50ms);  // nobody serves
  EXPECT_EQ(got->pass, 1u) << "the last snapshot built, with its own pass number and ages";
}

// The store that answers a reader and the end of the next pass can come
// back to back, before the reader's thread runs again: the pass owes newer
// state at once. The reader is served by that store all the same; it used to
// wait out its whole patience for the same snapshot (the daemon's scrape then
// took 2 s and served ages 2 s older: a stage-1 run on 6.12 saw 33 cgroups at
// 6.5 s against their max_age of 6).
TEST(Publication, AReaderIsServedByTheStoreAfterItsAskEvenWhenTheNextPassOwesAgainAtOnce) {
  auto snapshot = [](uint64_t pass) {
    auto s = std::make_shared<Snapshot>();
    s->pass = pass;
    return s;
  };
  Publication pub(snapshot(1));
  ASSERT_TRUE(pub.set_on_demand());
  for (uint64_t pass = 2; pass < 22; ++pass) {
    ASSERT_FALSE(pub.build_now()) << "pass " << pass << " owes its state";
    auto reader = std::async(std::launch::async, [&] { return pub.current(1h); });
    pollfd asked{pub.wanted_fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&asked, 1, 5000), 1);
    ASSERT_TRUE(pub.take_request());
    pub.store(snapshot(pass));
    pub.build_now();  // the next pass ends before the reader wakes (most rounds)
    if (reader.wait_for(10s) != std::future_status::ready) {
      pub.store(snapshot(pass));  // lets it go
      FAIL() << "round " << pass << ": the reader still waits 10 s after the store made for it";
    }
    EXPECT_EQ(reader.get()->pass, pass);
    pub.store(snapshot(pass));  // as the pass thread would for the next reader
  }
}

TEST_F(PublicationTest, AnOomKillBetweenPassesIsOwedToTheNextReader) {
  auto c = make();
  pass(*c);
  tree.set_event("pods/c1", "oom_kill", 1, true);
  ASSERT_TRUE(poller->flag(tree.dir("pods/c1") + "/memory.events"));
  clock.advance(300ms);
  EXPECT_TRUE(c->run_event_pass()) << "a kill: owed at once";
  auto reader = std::async(std::launch::async, [&] { return c->current(10s); });
  ASSERT_TRUE(asked(*c, 5000));
  c->serve_wanted();
  const auto got = reader.get();
  EXPECT_EQ(got->pass, 1u) << "no pass ran";
  for (const auto& v : got->cgroups) {
    if (v.id->path != "pods/c1") continue;
    EXPECT_EQ(v.probe.events->events.get(parse::ev_oom_kill), std::optional<uint64_t>(1));
  }
}

}  // namespace
}  // namespace memcg
