#include <gtest/gtest.h>

#include <chrono>

#include "config/load.h"
#include "base/parse/stat_keys.h"

namespace memcg::config {
namespace {

using namespace std::chrono_literals;

const HostFacts kHost{4096, 8};

Config load(std::string_view text) { return load_string(text, "test.toml", kHost); }

// Asserts that loading fails at exactly file:line:col with the key path in the message.
void expect_error(std::string_view text, uint32_t line, uint32_t col, const std::string& key,
                  const std::string& fragment) {
  try {
    load(text);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "test.toml");
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.column(), col) << e.what();
    EXPECT_EQ(e.key(), key) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("test.toml:" + std::to_string(line) + ":" + std::to_string(col) + ": ", 0), 0u)
        << e.what();
  }
}

TEST(Units, Durations) {
  EXPECT_EQ(parse_duration("500ms"), Duration(500ms));
  EXPECT_EQ(parse_duration("2s"), Duration(2s));
  EXPECT_EQ(parse_duration("1m"), Duration(60s));
  EXPECT_EQ(parse_duration("1m30s"), Duration(90s));
  EXPECT_EQ(parse_duration("1h2m3s4ms"), Duration(1h + 2min + 3s + 4ms));
  EXPECT_EQ(parse_duration("250us"), Duration(250us));
  for (const char* bad : {"", "5", "s", "1.5s", "-1s", "1x", "1s1m", "1s1s", "99999999999999h"})
    EXPECT_FALSE(parse_duration(bad)) << bad;
  EXPECT_EQ(format_duration(90s), "1m30s");
  EXPECT_EQ(format_duration(500ms), "500ms");
  EXPECT_EQ(format_duration(10s), "10s");
}

TEST(Units, Sizes) {
  EXPECT_EQ(parse_size("4MiB"), 4u << 20);
  EXPECT_EQ(parse_size("512KiB"), 512u << 10);
  EXPECT_EQ(parse_size("1GiB"), 1ull << 30);
  EXPECT_EQ(parse_size("2MB"), 2'000'000u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("0"), 0u);
  for (const char* bad : {"", "MiB", "4 MiB", "4mib", "1.5MiB", "-4KiB", "99999999999TiB"})
    EXPECT_FALSE(parse_size(bad)) << bad;
  EXPECT_EQ(format_size(4u << 20), "4MiB");
  EXPECT_EQ(format_size(1000), "1000B");
}

TEST(Config, BuiltinDefaultsFollowTheKernelSlack) {
  Config c = load("");
  // 64 (MEMCG_CHARGE_BATCH) pages x 4 KiB x 8 CPUs.
  EXPECT_EQ(c.defaults.threshold, 64u * 4096u * 8u);
  EXPECT_EQ(c.defaults.max_age, Duration(10s));
  EXPECT_EQ(c.collector.probe_interval, Duration(1s));
  EXPECT_EQ(c.collector.max_depth, 8);
  EXPECT_TRUE(c.defaults.stats.allows(*parse::stat_key_table().find("anon")));
  EXPECT_FALSE(c.defaults.stats.allows(*parse::stat_key_table().find("thp_collapse_alloc")));
}

TEST(Config, FullFileAndFirstMatchingRuleWins) {
  Config c = load(R"(
[collector]
root = "/sys/fs/cgroup"
probe_interval = "500ms"
rescan_interval = "30s"
max_depth = 4
max_cgroups = 500
include = ["**"]
exclude = ["user.slice/**"]

[defaults]
threshold = "1MiB"
max_age = "20s"
stats = ["anon", "file", "a_future_key"]

[[rule]]
match = "kubepods.slice/**"
threshold = "auto"
max_age = "5s"

[[rule]]
match = "kubepods.slice/kubepods-besteffort.slice/**"
threshold = 0
stats = ["*"]

[[rule]]
match = "system.slice/*.service"
max_age = "1m"
)");
  EXPECT_EQ(c.collector.root, "/sys/fs/cgroup");
  EXPECT_EQ(c.collector.probe_interval, Duration(500ms));
  EXPECT_EQ(c.collector.max_cgroups, 500u);
  EXPECT_TRUE(c.collector.includes("system.slice"));
  EXPECT_FALSE(c.collector.includes("user.slice/user-1000.slice"));

  auto kube = c.settings_for("kubepods.slice/kubepods-besteffort.slice/pod1");
  EXPECT_EQ(kube->threshold, 64u * 4096u * 8u) << "rule 1 matches first; rule 2 never applies";
  EXPECT_EQ(kube->max_age, Duration(5s));
  EXPECT_TRUE(kube->stats.allows_unknown("a_future_key")) << "stats fall back to [defaults]";
  EXPECT_EQ(kube->source, "rule 1 (kubepods.slice/**)");

  auto svc = c.settings_for("system.slice/ssh.service");
  EXPECT_EQ(svc->threshold, 1u << 20);
  EXPECT_EQ(svc->max_age, Duration(60s));

  auto other = c.settings_for("init.scope");
  EXPECT_EQ(other->source, "defaults");
  EXPECT_EQ(other->max_age, Duration(20s));
}

TEST(Config, PodmanUserSocketNeedsTheUidAndRoomForIt) {
  EXPECT_EQ(load("[containers]\npodman_user_socket = \"/run/podman-api/users/%U/podman.sock\"\n").containers.podman_user_socket,
            "/run/podman-api/users/%U/podman.sock");
  EXPECT_EQ(load("").containers.podman_user_socket, "") << "off by default";
  expect_error("[containers]\npodman_user_socket = \"/run/user/podman.sock\"\n", 2, 22, "containers.podman_user_socket",
               "must contain %U");
  expect_error("[containers]\npodman_user_socket = \"run/%U.sock\"\n", 2, 22, "containers.podman_user_socket", "absolute");
  // 101 bytes with %U become up to 109 with a ten-digit uid: too many for sun_path.
  const std::string long_path = "/" + std::string(95, 'p') + "%U.sk";
  expect_error("[containers]\npodman_user_socket = \"" + long_path + "\"\n", 2, 22, "containers.podman_user_socket",
               "longer than a Unix socket path");
}

TEST(Config, ErrorsCarryExactPositions) {
  expect_error("[collector]\nprobe_intervall = \"1s\"\n", 2, 1, "collector.probe_intervall", "unknown key");
  expect_error("[collector]\nprobe_interval = 5\n", 2, 18, "collector.probe_interval", "duration");
  expect_error("[collector]\nprobe_interval = \"5 seconds\"\n", 2, 18, "collector.probe_interval", "invalid duration");
  expect_error("[collector]\nprobe_interval = \"0s\"\n", 2, 18, "collector.probe_interval", "greater than zero");
  expect_error("[defaults]\nthreshold = \"4 megs\"\n", 2, 13, "defaults.threshold", "invalid size");
  expect_error("[defaults]\nthreshold = -1\n", 2, 13, "defaults.threshold", "negative");
  expect_error("[defaults]\nstats = [\"anon\", \"Bad-Key\"]\n", 2, 18, "defaults.stats[2]", "not a memory.stat key");
  expect_error("[collector]\nexclude = [\"ok/**\", \"a/[bc\"]\n", 2, 21, "collector.exclude[2]", "unterminated");
  expect_error("[collector]\nmax_depth = 100\n", 2, 13, "collector.max_depth", "between 0 and 64");
  expect_error("[collector]\nroot = \"relative/path\"\n", 2, 8, "collector.root", "absolute");
  expect_error("[[rule]]\nthreshold = \"1MiB\"\n", 1, 1, "rule[1].match", "missing");
  expect_error("\n\n[[rule]]\nmatch = \"a\"\n[[rule]]\nmatch = \"b\"\nmax_agee = \"1s\"\n", 7, 1, "rule[2].max_agee",
               "unknown key");
  expect_error("rule = 5\n", 1, 8, "rule", "[[rule]]");
  expect_error("[webb]\n", 1, 2, "webb", "unknown key");  // the key name inside the brackets
  // Syntax errors come from the TOML parser with its position.
  expect_error("[collector\nmax_depth = 1\n", 1, 11, "", "");
}

// collector.memory_budget: the daemon's own limit by default, off, or a
// size no smaller than what the daemon needs for itself.
TEST(Config, MemoryBudgetIsAutoOffOrASize) {
  EXPECT_EQ(load("").collector.memory_budget, CollectorConfig::kMemoryBudgetAuto);
  EXPECT_EQ(load("[collector]\nmemory_budget = \"auto\"\n").collector.memory_budget, CollectorConfig::kMemoryBudgetAuto);
  EXPECT_EQ(load("[collector]\nmemory_budget = \"off\"\n").collector.memory_budget, 0u);
  EXPECT_EQ(load("[collector]\nmemory_budget = \"512MiB\"\n").collector.memory_budget, 512u << 20);
  expect_error("[collector]\nmemory_budget = \"1MiB\"\n", 2, 17, "collector.memory_budget", "at least 32MiB");
  expect_error("[collector]\nmemory_budget = \"lots\"\n", 2, 17, "collector.memory_budget", "invalid size");
  expect_error("[collector]\nmemory_budget = 1073741824\n", 2, 17, "collector.memory_budget", "must be \"auto\"");
  EXPECT_NE(describe(load("[collector]\nmemory_budget = \"1GiB\"\n")).find("memory_budget=1GiB"), std::string::npos);
}

TEST(Config, MissingFileIsAConfigError) {
  try {
    load_file("/nonexistent/memcg.toml", kHost);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(Config, DescribeListsEffectiveRules) {
  Config c = load("[defaults]\nthreshold = \"1MiB\"\n[[rule]]\nmatch = \"a/**\"\nmax_age = \"1m30s\"\nstats = [\"*\"]\n");
  const std::string d = describe(c);
  EXPECT_NE(d.find("defaults: name=default threshold=1MiB max_age=10s stats=anon,file,"), std::string::npos) << d;
  EXPECT_NE(d.find("rule 1 (a/**): name=a/** threshold=1MiB max_age=1m30s stats=all"), std::string::npos) << d;
  EXPECT_NE(d.find("metrics: profile=default"), std::string::npos) << d;
}

TEST(Config, ProfilePicksTheAllowlistAndFullAddsThePathLabel) {
  const Config lean = load("[metrics]\nprofile = \"lean\"\n");
  EXPECT_EQ(lean.metrics.profile, Profile::lean);
  EXPECT_EQ(lean.defaults.stats.known, StatFilter::defaults(Profile::lean).known);
  const Config full = load("[metrics]\nprofile = \"full\"\nidentity_labels = [\"pod\"]\n");
  EXPECT_EQ(full.defaults.stats.known, StatFilter::defaults(Profile::full).known);
  EXPECT_EQ(full.metrics.identity_labels, (std::vector<std::string>{"cgroup", "pod"}));
  // An explicit allowlist wins over the profile's.
  const Config own = load("[metrics]\nprofile = \"full\"\n[defaults]\nstats = [\"anon\"]\n");
  EXPECT_EQ(own.defaults.stats.known.count(), 1u);
  EXPECT_EQ(StatFilter::defaults(Profile::full).known.count(), 23u);
  expect_error("[metrics]\nprofile = \"huge\"\n", 2, 11, "metrics.profile", "\"lean\", \"default\", \"full\" or \"cadvisor\"");
}

TEST(Config, CadvisorProfileReadsWhatItsSeriesNeedAndTakesNoIdentityLabels) {
  const Config c = load("[metrics]\nprofile = \"cadvisor\"\n");
  EXPECT_EQ(c.metrics.profile, Profile::cadvisor);
  for (auto key : {"anon", "file", "file_mapped", "inactive_file", "pgfault", "pgmajfault"})
    EXPECT_TRUE(c.defaults.stats.allows(*parse::stat_key_table().find(key))) << key;
  EXPECT_EQ(c.defaults.stats.known.count(), 6u);
  // Its series carry the kubelet's labels; the exporter's own are keyed by id.
  expect_error("[metrics]\nprofile = \"cadvisor\"\nidentity_labels = [\"pod\"]\n", 3, 19, "metrics.identity_labels",
               "must be empty with profile \"cadvisor\"");
}

TEST(Config, RuleNamesAreLabelsAndMustBeUnique) {
  const Config c = load("[[rule]]\nmatch = \"a/**\"\nname = \"apps\"\n[[rule]]\nmatch = \"b/*\"\n");
  EXPECT_EQ(c.settings_for("a/x")->name, "apps");
  EXPECT_EQ(c.settings_for("b/x")->name, "b/*");
  EXPECT_EQ(c.settings_for("c")->name, "default");
  expect_error("[[rule]]\nmatch = \"a\"\n[[rule]]\nmatch = \"a\"\n", 4, 9, "rule[2].match", "already used");
  expect_error("[[rule]]\nmatch = \"a\"\nname = \"default\"\n", 3, 8, "rule[1].name", "already used");
  expect_error("[[rule]]\nmatch = \"a\"\nname = \"\"\n", 3, 8, "rule[1].name", "non-empty");
}

}  // namespace
}  // namespace memcg::config

namespace memcg::config {
namespace {

// The shipped example must load and must equal the built-in defaults, so the
// documentation cannot drift from the code.
TEST(Config, ShippedExampleIsValidAndMatchesDefaults) {
  const Config example = load_file(MEMCG_EXAMPLE_CONFIG, kHost);
  const Config builtin = Config::builtin(kHost);
  EXPECT_EQ(example.defaults.threshold, builtin.defaults.threshold);
  EXPECT_EQ(example.defaults.max_age, builtin.defaults.max_age);
  EXPECT_EQ(example.defaults.stats.known, builtin.defaults.stats.known);
  EXPECT_EQ(example.collector.probe_interval, builtin.collector.probe_interval);
  EXPECT_EQ(example.collector.rescan_interval, builtin.collector.rescan_interval);
  EXPECT_EQ(example.collector.max_depth, builtin.collector.max_depth);
  EXPECT_EQ(example.collector.max_cgroups, builtin.collector.max_cgroups);
  EXPECT_TRUE(example.rules.empty());
}

}  // namespace
}  // namespace memcg::config
