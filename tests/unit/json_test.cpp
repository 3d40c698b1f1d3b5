// The snapshot JSON (what --once prints) for a fixture tree and a manual clock,
// compared with tests/golden/snapshot.json. To regenerate after an intended
// change: MEMCG_UPDATE_GOLDEN=1 ./build/tests/unit_tests --gtest_filter='SnapshotJson.*'
#include <gtest/gtest.h>


#include "plugin/collector.h"
#include "plugin/json_writer.h"
#include "plugin/snapshot_json.h"
#include "tests/fixtures/tree.h"
#include "tests/unit/golden.h"

namespace memcg {
namespace {

using namespace std::chrono_literals;

// Replaces the digits after every occurrence of `key` with "0".
std::string zero_numbers_after(std::string s, const std::string& key) {
  for (size_t pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + key.size())) {
    const size_t start = pos + key.size();
    size_t end = start;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    s.replace(start, end - start, "0");
  }
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

TEST(SnapshotJson, MatchesGolden) {
  fixtures::Tree tree;
  fixtures::CgroupSpec web;
  web.current = 64 << 20;
  web.peak = 80 << 20;
  web.max = "134217728";
  web.high = "100663296";
  web.stat.set("anon", 48 << 20).set("file", 16 << 20).set("inactive_file", 12 << 20).set("pgfault", 1000);
  web.stat.set("pgmajfault", 4).set("a_future_key", 77);
  tree.add("web.slice", web);
  fixtures::CgroupSpec db = web;
  db.current = 32 << 20;
  db.swap = std::nullopt;
  db.max = "max";
  db.pressure = fixtures::kernel_file("work", "memory.pressure");
  tree.add("web.slice/db.service", db);

  auto cfg = config::Config::builtin({4096, 2});  // threshold 512 KiB
  cfg.rules.push_back({*config::Glob::compile("web.slice/*.service", nullptr), uint64_t{1 << 20},
                       std::chrono::nanoseconds(30s), config::StatFilter{true, {}, {}}, {}});
  cfg.resolve();
  ManualClock clock;
  clock.step = 1us;
  clock.cpu_step = 1us;
  Collector c(tree.root(), cfg, clock);
  c.run_pass();
  clock.advance(2s);
  tree.set_stat("web.slice", tree.spec("web.slice").stat.set("pgfault", 3000).set("anon", 50 << 20));
  tree.set_current("web.slice", (64 << 20) + (2 << 20));
  tree.set_event("web.slice/db.service", "high", 7);
  c.run_pass();

  std::string out;
  auto snap = c.latest();
  render_snapshot_json(*snap, clock.peek() + 500ms, out);
  // Inode numbers belong to the temp dir; everything else is deterministic.
  out = zero_numbers_after(out, "\"inode\": ");
  out = replace_all(out, tree.root(), "FIXTURE");
  testing::compare_with_golden("snapshot.json", out);
}

TEST(JsonWriter, EscapesAndNonFinite) {
  std::string out;
  JsonWriter w(out, false);
  w.begin_object().key("s").value("a\"b\\c\n\x01").key("inf").value(1.0 / 0.0).key("n").value(uint64_t{18446744073709551615u});
  w.key("e").begin_array().end_array().end_object();
  EXPECT_EQ(out, R"({"s":"a\"b\\c\n\u0001","inf":null,"n":18446744073709551615,"e":[]})");
}

}  // namespace
}  // namespace memcg

TEST(JsonWriter, InvalidUtf8BecomesReplacementCharacters) {
  auto esc = [](std::string_view s) {
    std::string out;
    memcg::append_json_escaped(out, s);
    return out;
  };
  EXPECT_EQ(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xb3"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xb3\"");  // kept
  EXPECT_EQ(esc("a\xff" "b"), "\"a\xef\xbf\xbd" "b\"");                 // not a lead byte
  EXPECT_EQ(esc("\xc3"), "\"\xef\xbf\xbd\"");                           // truncated
  EXPECT_EQ(esc("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"");           // overlong '/'
  EXPECT_EQ(esc("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");  // a surrogate
  EXPECT_EQ(esc("\xf4\x90\x80\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");  // > U+10FFFF
}
