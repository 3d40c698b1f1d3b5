// Output hygiene: cgroup names are arbitrary bytes that anyone with a
// delegated subtree chooses. Logs, /metrics and the status page must not
// carry their control characters raw (forged log lines, terminal escapes).
#include <gtest/gtest.h>

#include <string>

#include "exporter/exposition/landing_page.h"
#include "exporter/log.h"
#include "exporter/exposition/metrics.h"

namespace memcg::exporter {
namespace {

const std::string kHostile = "evil\n level=error forged\x1b[31m\r\x07\x7f\\x2d.service";

TEST(Hygiene, LogLinesEscapeControlCharactersSoNoLineCanBeForged) {
  const std::string line = escape_for_log("cannot read " + kHostile + "/memory.stat: Permission denied");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_EQ(line, "cannot read evil\\x0a level=error forged\\x1b[31m\\x0d\\x07\\x7f\\\\x2d.service/memory.stat: Permission denied");
  EXPECT_EQ(escape_for_log("caf\xC3\xA9 \xFF"), "caf\xC3\xA9 \\xff") << "UTF-8 kept, stray bytes escaped";
}

TEST(Hygiene, MetricsAndTheStatusPageReplaceControlCharacters) {
  Snapshot snap;
  auto settings = std::make_shared<config::Settings>();
  settings->name = "default";
  snap.add_cgroup(std::make_shared<CgroupId>(CgroupId{"system.slice/" + kHostile, 5, 2, {}}), settings);
  DaemonStatus status;
  ProcessStats proc;
  std::string text;
  render_text({snap, TimePoint{}, status, proc, "v", "r"}, text);
  const size_t at = text.find("memcg_cgroup_info{");
  ASSERT_NE(at, std::string::npos);
  const std::string info = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(info.find("cgroup=\"system.slice/evil\\n level=error forged\xEF\xBF\xBD[31m\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\\\\x2d.service\""),
            std::string::npos)
      << info;
  for (char c : text) EXPECT_TRUE(c == '\n' || !(static_cast<unsigned char>(c) < 0x20 || c == 0x7f)) << int(c);

  const std::string page = render_landing_page(snap, config::Config::builtin({4096, 2}), TimePoint{});
  EXPECT_EQ(page.find('\x1b'), std::string::npos);
  EXPECT_EQ(page.find('\x07'), std::string::npos);
  EXPECT_NE(page.find("forged\xEF\xBF\xBD[31m"), std::string::npos);
  EXPECT_EQ(page.find("id=\"kernel\""), std::string::npos) << "no kernel table before the kernel is probed";
  // The configuration block keeps its lines: no control byte turned into
  // U+FFFD between them (the forged name above is the page's only one).
  const size_t pre = page.find("<h2>Configuration</h2>\n<pre>config: (built-in defaults)\ncollector: root=");
  ASSERT_NE(pre, std::string::npos) << page.substr(page.find("<h2>Configuration"), 120);
  EXPECT_EQ(page.find("\xEF\xBF\xBD", pre), std::string::npos);
  EXPECT_EQ(page.find("recovered from"), std::string::npos) << "no removed cgroup's kill recovered: not said";
  snap.kills_recovered = 2;
  snap.kills_unattributed = 1;
  EXPECT_NE(render_landing_page(snap, config::Config::builtin({4096, 2}), TimePoint{})
                .find("2 kill events of removed cgroups recovered from their parent's count, 1 left to the parent's count alone"),
            std::string::npos);
  snap.kills_recovered = snap.kills_unattributed = 0;

  // A kernel release is the host's to choose: escaped like every other text.
  snap.kernel = std::make_shared<const cgroupfs::KernelFacts>(cgroupfs::probe_kernel("/nonexistent", "6.12<script>", {4096, 2}, cgroupfs::RootFs::cgroup2fs));
  const std::string with_kernel = render_landing_page(snap, config::Config::builtin({4096, 2}), TimePoint{});
  EXPECT_NE(with_kernel.find("6.12&lt;script&gt;, 2 online CPUs"), std::string::npos);
  EXPECT_NE(with_kernel.find("up to 1.0 MiB behind when read (flush threshold 128 updates = 512.0 KiB, per cgroup subtree"),
            std::string::npos) << with_kernel;
}

}  // namespace
}  // namespace memcg::exporter
