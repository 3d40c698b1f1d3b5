// Memory events end to end through the collector: every key of the three
// event files, the wake-up between passes when the kernel flags one, and the
// tombstones that keep a removed cgroup's counters (tests/fixtures/
// fake_poller.h flags files as kernfs would).
#include <gtest/gtest.h>
#include <sys/xattr.h>

#include "config/config.h"
#include "exporter/exposition/metrics.h"
#include "exporter/schedule.h"
#include "plugin/collector.h"
#include "tests/fixtures/fake_poller.h"
#include "tests/fixtures/faulty_io.h"
#include "tests/fixtures/tree.h"

namespace memcg {
namespace {

using namespace std::chrono_literals;
using cache::ReadReason;

class EventsTest : public ::testing::Test {
 protected:
  EventsTest() {
    tree.add("pods", spec(20 << 20));
    tree.add("pods/c1", spec(8 << 20));
    tree.add("pods/c2", spec(8 << 20));
    cfg = config::Config::builtin({4096, 1});
    cfg.collector.rescan_interval = 1h;
    cfg.collector.probe_interval = 10s;
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
    auto x = std::make_unique<fixtures::FakePoller>();
    exits = x.get();
    c->set_exit_poller(std::move(x));
    return c;
  }
  PassReport pass(Collector& c) {
    clock.advance(10s);
    return c.run_pass();
  }
  const CgroupView* find(const std::vector<CgroupView>& views, const std::string& path) {
    for (const auto& v : views)
      if (v.id->path == path) return &v;
    return nullptr;
  }
  const CgroupView& view(Collector& c, const std::string& path) {
    snap = c.latest();
    const CgroupView* v = find(snap->cgroups, path);
    if (!v) throw std::runtime_error("no cgroup " + path);
    return *v;
  }
  static uint64_t event(const CgroupView& v, parse::EventKey k) { return v.probe.events->events.get(k).value_or(99); }
  // The kernel counts an OOM kill in the cgroup's own files and its
  // ancestors' memory.events, and flags each of them.
  void oom_kill(const std::string& leaf, uint64_t n) {
    tree.set_event(leaf, "oom", n, true);
    tree.set_event(leaf, "oom_kill", n, true);
    tree.set_event("pods", "oom", n);
    tree.set_event("pods", "oom_kill", n);
    ASSERT_TRUE(poller->flag(tree.dir(leaf) + "/memory.events"));
    ASSERT_TRUE(poller->flag(tree.dir("pods") + "/memory.events"));
  }

  fixtures::Tree tree;
  config::Config cfg;
  ManualClock clock;
  fixtures::FakePoller* poller = nullptr;
  fixtures::FakePoller* exits = nullptr;  // the cgroup.events set
  std::shared_ptr<const Snapshot> snap;
};

TEST_F(EventsTest, AFlaggedKillIsPublishedBetweenPassesAndReadIntoMemoryStatAtTheNext) {
  auto c = make();
  pass(*c);
  const auto before = c->latest();
  EXPECT_EQ(before->events_polled, 3u) << "every memory.events watched (the root has none)";
  EXPECT_FALSE(c->run_event_pass()) << "nothing flagged: nothing published";

  oom_kill("pods/c1", 1);
  clock.advance(300ms);  // between passes: probe_interval is 10 s
  EXPECT_TRUE(c->run_event_pass());
  const auto after = c->latest();
  EXPECT_EQ(after->pass, before->pass) << "no pass ran";
  EXPECT_GT(after->publication, before->publication);
  EXPECT_EQ(event(view(*c, "pods/c1"), parse::ev_oom_kill), 1u);
  EXPECT_EQ(view(*c, "pods/c1").probe.events->local->get(parse::ev_oom_kill), std::optional<uint64_t>(1))
      << "memory.events.local is read with memory.events";
  EXPECT_EQ(event(view(*c, "pods"), parse::ev_oom_kill), 1u);
  EXPECT_EQ(event(view(*c, "pods/c2"), parse::ev_oom_kill), 0u);
  EXPECT_EQ(view(*c, "pods/c2").probe.events, before->cgroups[3].probe.events) << "an unflagged cgroup's block is shared";
  EXPECT_EQ(after->event_wakeups, 2u);
  EXPECT_EQ(after->event_wakeup_reads, 2u);

  // The next pass reads memory.stat of both for the event, as if it had
  // seen the kill itself; the quiet one is not read.
  pass(*c);
  EXPECT_EQ(view(*c, "pods/c1").reads[static_cast<size_t>(ReadReason::event)], 1u);
  EXPECT_EQ(view(*c, "pods").reads[static_cast<size_t>(ReadReason::event)], 1u);
  EXPECT_EQ(view(*c, "pods/c2").reads[static_cast<size_t>(ReadReason::event)], 0u);
}

TEST_F(EventsTest, EveryKeyOfTheThreeFilesIsKeptAndAQuietReadSharesTheBlock) {
  tree.spec("pods/c1").events["sock_throttled"] = 0;
  tree.spec("pods/c1").events["a_future_event"] = 0;
  tree.add("pods/c1", tree.spec("pods/c1"));
  auto c = make();
  pass(*c);
  const auto* ev = view(*c, "pods/c1").probe.events.get();
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->events.get(parse::ev_sock_throttled), std::optional<uint64_t>(0));
  ASSERT_EQ(ev->events.unknown.size(), 1u);
  EXPECT_EQ(ev->events.unknown[0].name, "a_future_event");
  ASSERT_TRUE(ev->swap.has_value());
  EXPECT_EQ(ev->swap->get(parse::sev_fail), std::optional<uint64_t>(0));

  tree.set_swap_event("pods/c1", "fail", 3);
  tree.set_event("pods/c1", "a_future_event", 2);
  ASSERT_TRUE(poller->flag(tree.dir("pods/c1") + "/memory.swap.events"));
  ASSERT_TRUE(poller->flag(tree.dir("pods/c1") + "/memory.events"));
  const uint64_t published = c->latest()->publication;
  EXPECT_FALSE(c->run_event_pass()) << "read, but only an OOM kill is published between passes";
  EXPECT_EQ(c->latest()->publication, published);
  pass(*c);  // the next pass publishes what the wake-up read
  ev = view(*c, "pods/c1").probe.events.get();
  EXPECT_EQ(ev->swap->get(parse::sev_fail), std::optional<uint64_t>(3));
  EXPECT_EQ(ev->events.unknown[0].value, 2u);

  // Flagged but unchanged: nothing new.
  ASSERT_TRUE(poller->flag(tree.dir("pods/c1") + "/memory.events"));
  EXPECT_FALSE(c->run_event_pass());
  pass(*c);
  EXPECT_EQ(view(*c, "pods/c1").probe.events.get(), ev);
}

TEST_F(EventsTest, AKilledCgroupRemovedAtOnceKeepsItsKillUntilItsRetentionEnds) {
  cfg.metrics.removed_retention = 2min;
  cfg.collector.rescan_interval = 10s;  // a fixture's removed files stay readable: the walk says it is gone
  auto c = make();
  pass(*c);
  oom_kill("pods/c1", 1);
  clock.advance(50ms);
  c->run_event_pass();  // the kernel's flag, read at once
  tree.remove("pods/c1");  // ... and the container gone 100 ms later
  clock.advance(100ms);
  pass(*c);
  EXPECT_EQ(find(c->latest()->cgroups, "pods/c1"), nullptr);
  ASSERT_TRUE(c->latest()->removed);
  const CgroupView* t = find(*c->latest()->removed, "pods/c1");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(event(*t, parse::ev_oom_kill), 1u) << "the count read when the kernel raised the event";
  EXPECT_NE(t->removed_at, WallTime{});
  EXPECT_FALSE(t->stat) << "gauges are not kept";

  // Served until two minutes after the removal, then gone.
  for (int i = 0; i < 10; ++i) pass(*c);  // 100 s
  ASSERT_TRUE(c->latest()->removed);
  EXPECT_NE(find(*c->latest()->removed, "pods/c1"), nullptr);
  for (int i = 0; i < 3; ++i) pass(*c);  // 130 s
  EXPECT_FALSE(c->latest()->removed);
  EXPECT_EQ(c->latest()->removed_dropped, 0u);
}

// The kernel holds back a memory.events notification that comes within
// 10 ms of the previous one (a `max` event just before the kill) and drops it
// when the cgroup is removed; the last task's exit flags cgroup.events at
// once, before its parent can reap it and the runtime remove the cgroup.
TEST_F(EventsTest, AnExitReadsAKillWhoseNotificationTheKernelHeldBack) {
  cfg.collector.rescan_interval = 10s;
  auto c = make();
  pass(*c);
  const size_t exit_file = static_cast<size_t>(FileKind::cgroup_events);
  EXPECT_EQ(c->latest()->file_reads[exit_file], 0u) << "cgroup.events is read only when flagged";
  tree.set_event("pods/c1", "oom_kill", 1, true);  // counted, its notification held back
  tree.set_event("pods", "oom_kill", 1);
  clock.advance(5ms);
  EXPECT_FALSE(c->run_event_pass());
  EXPECT_EQ(event(view(*c, "pods/c1"), parse::ev_oom_kill), 0u) << "nothing flagged: nothing read";

  ASSERT_TRUE(exits->flag(tree.dir("pods/c1") + "/cgroup.events"));  // the last task exited
  clock.advance(1ms);
  EXPECT_TRUE(c->run_event_pass()) << "a kill read at the exit is published at once";
  EXPECT_EQ(event(view(*c, "pods/c1"), parse::ev_oom_kill), 1u);
  EXPECT_EQ(c->latest()->file_reads[exit_file], 1u) << "read, which clears the kernel's flag";
  EXPECT_EQ(event(view(*c, "pods"), parse::ev_oom_kill), 0u) << "only the exited cgroup is read";

  tree.remove("pods/c1");  // the runtime removes it; the kill stays
  clock.advance(10ms);
  pass(*c);
  ASSERT_TRUE(c->latest()->removed);
  const CgroupView* t = find(*c->latest()->removed, "pods/c1");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(event(*t, parse::ev_oom_kill), 1u);
}

// A cgroup.events that cannot be read would stay flagged and wake the
// collector every millisecond: it is reported, closed and no longer watched,
// and the kill is still read.
TEST_F(EventsTest, AnExitWhoseFileCannotBeReadIsReportedAndNoLongerWatched) {
  fixtures::FaultyIo io;
  auto c = std::make_unique<Collector>(tree.root(), cfg, clock, io);
  auto x = std::make_unique<fixtures::FakePoller>();
  exits = x.get();
  c->set_exit_poller(std::move(x));
  c->set_event_poller(std::make_unique<fixtures::FakePoller>());
  pass(*c);
  const size_t exit_file = static_cast<size_t>(FileKind::cgroup_events);
  io.faults_[tree.dir("pods/c1") + "/cgroup.events"] = EIO;
  tree.set_event("pods/c1", "oom_kill", 1, true);
  ASSERT_TRUE(exits->flag(tree.dir("pods/c1") + "/cgroup.events"));
  clock.advance(1ms);
  EXPECT_TRUE(c->run_event_pass());
  EXPECT_EQ(event(view(*c, "pods/c1"), parse::ev_oom_kill), 1u) << "the event files are read all the same";
  EXPECT_EQ(c->latest()->read_errors[exit_file], 1u);
  EXPECT_FALSE(exits->flag(tree.dir("pods/c1") + "/cgroup.events")) << "closed: out of the set";
  clock.advance(1ms);
  EXPECT_FALSE(c->run_event_pass());
  EXPECT_EQ(c->latest()->read_errors[exit_file], 1u);
}

// An exit flagged as the pass starts is read by the pass's probe, so that
// the flag never outlives the pass (the set is level-triggered: a flag left
// unread would wake the daemon's wait again and again).
TEST_F(EventsTest, AnExitFlaggedAtAPassIsReadByItsProbe) {
  auto c = make();
  pass(*c);
  tree.set_event("pods/c2", "oom_kill", 2, true);
  ASSERT_TRUE(exits->flag(tree.dir("pods/c2") + "/cgroup.events"));
  pass(*c);
  EXPECT_EQ(event(view(*c, "pods/c2"), parse::ev_oom_kill), 2u);
  EXPECT_EQ(c->latest()->file_reads[static_cast<size_t>(FileKind::cgroup_events)], 1u);
  EXPECT_EQ(view(*c, "pods/c2").reads[static_cast<size_t>(ReadReason::event)], 1u)
      << "a kill seen at an exit is a notable event: memory.stat is read for it";
}

TEST_F(EventsTest, TombstonesAreBoundedInCountAndTheDroppedAreCounted) {
  cfg.metrics.removed_max = 3;
  for (int i = 0; i < 5; ++i) tree.add("pods/x" + std::to_string(i), spec(1 << 20));
  auto c = make();
  pass(*c);
  for (int i = 0; i < 5; ++i) tree.remove("pods/x" + std::to_string(i));
  cfg.collector.rescan_interval = 1s;  // the walk finds them gone
  c->set_config(cfg);
  pass(*c);
  ASSERT_TRUE(c->latest()->removed);
  EXPECT_EQ(c->latest()->removed->size(), 3u);
  EXPECT_EQ(c->latest()->removed_dropped, 2u);
  EXPECT_EQ(find(*c->latest()->removed, "pods/x0"), nullptr) << "the oldest go first";
}

TEST_F(EventsTest, SystemdOomdKillsAreReadFromTheCgroupsExtendedAttributes) {
  auto c = make();
  pass(*c);
  EXPECT_FALSE(view(*c, "pods/c2").probe.events->oomd.ooms) << "oomd never acted: absent";
  // oomd marks the cgroup, then kills its processes: usage falls.
  ASSERT_EQ(::setxattr(tree.dir("pods/c2").c_str(), "user.oomd_ooms", "1", 1, 0), 0);
  ASSERT_EQ(::setxattr(tree.dir("pods/c2").c_str(), "user.oomd_kill", "4", 1, 0), 0);
  tree.set_current("pods/c2", 1 << 20);
  const auto read_before = view(*c, "pods/c2").stat;
  pass(*c);
  const auto& oomd = view(*c, "pods/c2").probe.events->oomd;
  EXPECT_EQ(oomd.ooms, std::optional<uint64_t>(1));
  EXPECT_EQ(oomd.kills, std::optional<uint64_t>(4));
  EXPECT_NE(view(*c, "pods/c2").stat, read_before) << "memory.stat read at once";
}

// No notification announces oomd's record (an inotify watch on the
// directory would slow every read of its files), so it keeps its clock
// while the watched limits do not.
TEST_F(EventsTest, SystemdOomdsRecordIsReadEveryLimitsMaxAgeWhileTheLimitsAreWatched) {
  cfg.collector.limits_max_age = 20s;
  auto c = make();
  for (int i = 0; i < 5; ++i) pass(*c);  // past the first periodic limits read: watched
  ASSERT_GT(c->latest()->limits_watched, 0u);
  ASSERT_EQ(::setxattr(tree.dir("pods/c2").c_str(), "user.oomd_ooms", "2", 1, 0), 0);  // usage does not fall
  for (int i = 0; i < 35 && !view(*c, "pods/c2").probe.events->oomd.ooms; ++i) pass(*c);
  EXPECT_EQ(view(*c, "pods/c2").probe.events->oomd.ooms, std::optional<uint64_t>(2)) << "within limits_max_age and a max_age read";
}

TEST_F(EventsTest, RemovedCgroupsServeTheirInfoAndCountersMarkedAndNothingElse) {
  auto c = make();
  pass(*c);
  oom_kill("pods/c1", 2);
  c->run_event_pass();
  tree.remove("pods/c1");
  cfg.collector.rescan_interval = 1s;
  c->set_config(cfg);
  pass(*c);
  const Snapshot& s = *c->latest();
  const CgroupView* t = find(*s.removed, "pods/c1");
  ASSERT_NE(t, nullptr);
  const std::string id = std::to_string(t->id->inode);
  exporter::DaemonStatus status;
  exporter::ProcessStats proc;
  std::string text;
  exporter::render_text({s, clock.peek(), status, proc, "v", "r"}, text);
  const auto series = [&](const std::string& prefix) {
    size_t n = 0;
    for (size_t at = text.find("\n" + prefix); at != std::string::npos; at = text.find("\n" + prefix, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(series("memcg_cgroup_info{cgroup_id=\"" + id + "\",cgroup=\"pods/c1\""), 1u) << text;
  EXPECT_EQ(series("memcg_memory_events_total{cgroup_id=\"" + id + "\",event=\"oom_kill\"} 2"), 1u);
  EXPECT_EQ(series("memcg_cgroup_removed_timestamp_seconds{cgroup_id=\"" + id + "\"}"), 1u);
  EXPECT_EQ(series("memcg_memory_current_bytes{cgroup_id=\"" + id + "\"}"), 0u);
  EXPECT_EQ(series("memcg_stat_last_read_timestamp_seconds{cgroup_id=\"" + id + "\"}"), 0u);
  EXPECT_EQ(series("memcg_exporter_removed_cgroups 1"), 1u);

  // The cadvisor profile keys series by path: recreated at the same path,
  // only the live cgroup is served under it.
  tree.add("pods/c1", spec(1 << 20));
  pass(*c);
  text.clear();
  exporter::render_text({*c->latest(), clock.peek(), status, proc, "v", "r", {}, config::Profile::cadvisor}, text);
  EXPECT_EQ(series("memcg_cgroup_info{id=\"/pods/c1\""), 1u) << text;
  EXPECT_EQ(series("container_oom_events_total{id=\"/pods/c1\"} 0"), 1u);
  EXPECT_EQ(series("memcg_cgroup_removed_timestamp_seconds{id=\"/pods/c1\"}"), 0u);
}

TEST(EventSpacing, AtMostOneWakeUpPerSpacingWhateverTheKernelRaisesAndExitsHaveTheirOwn) {
  ManualClock clock;
  exporter::PassSchedule s(10s, std::nullopt, clock.peek());
  EXPECT_TRUE(s.events_watched(clock.peek()));
  s.event_woken(clock.peek());
  EXPECT_FALSE(s.events_watched(clock.peek() + 9ms));
  EXPECT_EQ(s.events_watched_at(), clock.peek() + exporter::PassSchedule::kEventSpacing);
  EXPECT_TRUE(s.events_watched(clock.peek() + 10ms));
  // Exits have their own, shorter spacing: an exit right after an event
  // wake-up is not held back by it.
  EXPECT_TRUE(s.exits_watched(clock.peek() + 1ms));
  s.exit_woken(clock.peek() + 1ms);
  EXPECT_FALSE(s.exits_watched(clock.peek() + 1500us));
  EXPECT_EQ(s.exits_watched_at(), clock.peek() + 1ms + exporter::PassSchedule::kExitSpacing);
  EXPECT_TRUE(s.exits_watched(clock.peek() + 2ms));
  EXPECT_FALSE(s.events_watched(clock.peek() + 9ms)) << "the events' spacing is its own";
  // The pass keeps its own rhythm.
  EXPECT_EQ(s.wake_at(), clock.peek());
}

// The race the exit watch cannot always win: the runtime removes the
// cgroup before the wake-up reads it, and the kill lives on only in the
// parent's count (removed_kills.h). In a fixture tree the removed files stay
// readable, so the kill is written into the parent's memory.events alone,
// as if the cgroup's own had gone before it was read.
class RemovedKillsTest : public EventsTest {
 protected:
  RemovedKillsTest() {
    cfg.collector.rescan_interval = 10s;  // the walk finds the removal (and the ledgers settle) every pass
    descendants(2);
  }
  void descendants(int n) { tree.write("pods", "cgroup.stat", "nr_descendants " + std::to_string(n) + "\nnr_dying_descendants 0\n"); }
  void killed_in_parent_only(uint64_t n) {
    tree.set_event("pods", "oom", n);
    tree.set_event("pods", "oom_kill", n);
  }
  // Two passes (the second takes the parent's base), a kill only the parent
  // counted, `paths` removed (`left` descendants then), and the pass that
  // finds them gone.
  std::unique_ptr<Collector> kill_and_remove(const std::vector<std::string>& paths, int left) {
    auto c = make();
    pass(*c);
    pass(*c);
    killed_in_parent_only(1);
    for (const auto& p : paths) tree.remove(p);
    descendants(left);
    pass(*c);
    return c;
  }
  const CgroupView* removed(Collector& c, const std::string& path) {
    return c.latest()->removed ? find(*c.latest()->removed, path) : nullptr;
  }
};

TEST_F(RemovedKillsTest, AKillOnlyTheParentCountedIsGivenToTheOneChildRemovedUnread) {
  auto c = make();
  pass(*c);
  // A parent held at its limit: its max count moves right before the pass.
  clock.advance(10s - 5ms);
  tree.set_event("pods", "max", 40);
  ASSERT_TRUE(poller->flag(tree.dir("pods") + "/memory.events"));
  c->run_event_pass();
  tree.add("pods/c3", spec(1 << 20));  // and a child first read by the same pass, without kills
  descendants(3);
  clock.advance(5ms);
  c->run_pass();  // the kill counts stood still a pass: the parent's base is taken
  killed_in_parent_only(1);
  tree.remove("pods/c1");
  descendants(2);
  pass(*c);
  const CgroupView* t = removed(*c, "pods/c1");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(event(*t, parse::ev_oom_kill), 1u) << "recovered from the parent's count";
  EXPECT_EQ(event(*t, parse::ev_oom), 1u);
  EXPECT_EQ(event(*t, parse::ev_oom_group_kill), 0u);
  EXPECT_EQ(c->latest()->kills_recovered, 2u);
  EXPECT_EQ(c->latest()->kills_unattributed, 0u);
  EXPECT_EQ(event(view(*c, "pods"), parse::ev_oom_kill), 1u) << "the parent's own count as the kernel has it";
  EXPECT_EQ(event(view(*c, "pods/c2"), parse::ev_oom_kill), 0u);

  // Given once: the next removal finds nothing more to explain.
  tree.remove("pods/c2");
  descendants(1);
  pass(*c);
  EXPECT_EQ(event(*removed(*c, "pods/c2"), parse::ev_oom_kill), 0u);
  EXPECT_EQ(c->latest()->kills_recovered, 2u);
}

TEST_F(RemovedKillsTest, TwoChildrenRemovedUnreadAtOnceLeaveTheKillToTheParent) {
  auto c = kill_and_remove({"pods/c1", "pods/c2"}, 0);
  EXPECT_EQ(event(*removed(*c, "pods/c1"), parse::ev_oom_kill), 0u);
  EXPECT_EQ(event(*removed(*c, "pods/c2"), parse::ev_oom_kill), 0u);
  EXPECT_EQ(c->latest()->kills_recovered, 0u);
  EXPECT_EQ(c->latest()->kills_unattributed, 2u) << "oom and oom_kill, counted once";
}

TEST_F(RemovedKillsTest, ADescendantNotCollectedMayHaveHadTheKill) {
  cfg.collector.exclude = {*config::Glob::compile("pods/hidden", nullptr)};
  cfg.resolve();
  tree.add("pods/hidden", spec(1 << 20));
  descendants(3);
  auto c = kill_and_remove({"pods/c1"}, 2);
  EXPECT_EQ(event(*removed(*c, "pods/c1"), parse::ev_oom_kill), 0u);
  EXPECT_EQ(c->latest()->kills_unattributed, 2u);
}

TEST_F(RemovedKillsTest, AChildReadAfterItsExitKeepsItsOwnCountsAndCostsNoRead) {
  auto c = make();
  pass(*c);
  pass(*c);
  tree.write("pods/c1", "cgroup.events", "populated 0\nfrozen 0\n");
  ASSERT_TRUE(exits->flag(tree.dir("pods/c1") + "/cgroup.events"));
  clock.advance(1ms);
  c->run_event_pass();
  pass(*c);  // publishes what the wake-up read
  const uint64_t reads = c->latest()->file_reads[static_cast<size_t>(FileKind::events)];
  killed_in_parent_only(1);  // another's: a cgroup the walk never saw, say
  tree.remove("pods/c1");
  descendants(1);
  pass(*c);
  EXPECT_EQ(event(*removed(*c, "pods/c1"), parse::ev_oom_kill), 0u) << "its counts were final";
  EXPECT_EQ(c->latest()->kills_recovered + c->latest()->kills_unattributed, 0u);
  EXPECT_EQ(c->latest()->file_reads[static_cast<size_t>(FileKind::events)], reads)
      << "no read of the parent's or the siblings' counts for a removal whose counts were final";
}

}  // namespace
}  // namespace memcg
