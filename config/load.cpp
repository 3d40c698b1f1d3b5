#include "config/load.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "base/parse/stat_keys.h"
#include "base/sys/read_file.h"

namespace memcg::config {
namespace {

constexpr size_t kMaxConfigBytes = 4u << 20;  // a configuration is a few KiB

class Loader {
 public:
  Loader(std::string file, const HostFacts& host) : file_(std::move(file)), host_(host) {}

  Config load(std::string_view text) {
    toml::table root;
    try {
      root = toml::parse(text, file_);
    } catch (const toml::parse_error& e) {
      throw ConfigError(file_, e.source().begin.line, e.source().begin.column, "",
                        std::string(e.description()));
    }
    Config c = Config::builtin(host_);
    c.source_path = file_;
    check_keys(root, "", {"collector", "web", "containers", "metrics", "defaults", "rule"});
    if (auto* t = table_at(root, "collector", "collector")) load_collector(*t, c.collector);
    if (auto* t = table_at(root, "web", "web")) load_web(*t, c.web);
    if (auto* t = table_at(root, "containers", "containers")) load_containers(*t, c.containers);
    if (auto* t = table_at(root, "metrics", "metrics")) {
      check_keys(*t, "metrics", {"profile", "identity_labels", "removed_retention", "removed_max"});
      if (auto* n = t->get("removed_retention")) c.metrics.removed_retention = duration(*n, "metrics.removed_retention", true);
      if (auto* n = t->get("removed_max"))
        c.metrics.removed_max = static_cast<uint64_t>(integer(*n, "metrics.removed_max", 0, 1'000'000));
      if (auto* n = t->get("profile")) c.metrics.profile = profile(*n, "metrics.profile");
      if (auto* n = t->get("identity_labels")) c.metrics.identity_labels = identity_labels(*n, "metrics.identity_labels");
      if (auto* n = t->get("identity_labels"); n && c.metrics.profile == Profile::cadvisor && !c.metrics.identity_labels.empty())
        fail(*n, "metrics.identity_labels",
             "must be empty with profile \"cadvisor\": its series carry the kubelet's labels (id, name, image, container, pod, namespace)");
    }
    if (c.metrics.profile == Profile::full &&
        (c.metrics.identity_labels.empty() || c.metrics.identity_labels.front() != "cgroup"))
      c.metrics.identity_labels.insert(c.metrics.identity_labels.begin(), "cgroup");
    // The profile picks the default allowlist; [defaults] stats overrides it.
    c.defaults.stats = StatFilter::defaults(c.metrics.profile);
    if (auto* t = table_at(root, "defaults", "defaults")) load_defaults(*t, c.defaults);
    if (auto* node = root.get("rule")) {
      auto* arr = node->as_array();
      if (!arr) fail(*node, "rule", "must be an array of tables: write [[rule]]");
      std::vector<std::string> names{"default"};  // [defaults]' label value
      for (size_t i = 0; i < arr->size(); ++i) {
        const std::string path = "rule[" + std::to_string(i + 1) + "]";
        auto* t = (*arr)[i].as_table();
        if (!t) fail((*arr)[i], path, "must be a table");
        c.rules.push_back(load_rule(*t, path));
        // The name is a label value of memcg_cgroup_info and the per-rule
        // series: two rules with one name would make duplicate series.
        const std::string& name = c.rules.back().name.empty() ? c.rules.back().match.pattern() : c.rules.back().name;
        if (std::find(names.begin(), names.end(), name) != names.end()) {
          const toml::node* at = t->get("name") ? t->get("name") : t->get("match");
          fail(*at, path + (t->get("name") ? ".name" : ".match"),
               "rule name \"" + name + "\" is already used (\"default\" is [defaults]'); give this rule a unique name = \"...\"");
        }
        names.push_back(name);
      }
    }
    c.resolve();
    return c;
  }

 private:
  [[noreturn]] void fail(const toml::node& n, const std::string& key, const std::string& msg) const {
    throw ConfigError(file_, n.source().begin.line, n.source().begin.column, key, msg);
  }

  static std::string join(const std::string& prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
  }

  void check_keys(const toml::table& t, const std::string& prefix,
                  std::initializer_list<std::string_view> allowed) const {
    for (auto&& [k, v] : t) {
      bool ok = false;
      for (auto a : allowed) ok = ok || a == k.str();
      if (ok) continue;
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      throw ConfigError(file_, k.source().begin.line, k.source().begin.column, join(prefix, k.str()),
                        "unknown key (expected one of: " + list + ")");
    }
  }

  const toml::table* table_at(const toml::table& parent, std::string_view key, const std::string& path) const {
    auto* n = parent.get(key);
    if (!n) return nullptr;
    if (!n->is_table()) fail(*n, path, "must be a table");
    return n->as_table();
  }

  Duration duration(const toml::node& n, const std::string& key, bool allow_zero = false) const {
    auto s = n.value<std::string>();
    if (!n.is_string() || !s) fail(n, key, "must be a duration string such as \"500ms\", \"2s\" or \"1m\"");
    auto d = parse_duration(*s);
    if (!d) fail(n, key, "invalid duration \"" + *s + "\" (use units ns, us, ms, s, m, h, e.g. \"1m30s\")");
    if (!allow_zero && d->count() <= 0) fail(n, key, "must be greater than zero");
    return *d;
  }

  uint64_t size(const toml::node& n, const std::string& key) const {
    if (auto i = n.as_integer()) {
      if (i->get() < 0) fail(n, key, "must not be negative");
      return static_cast<uint64_t>(i->get());
    }
    if (auto s = n.as_string()) {
      if (s->get() == "auto") return kernel_flush_slack(host_);
      if (auto v = parse_size(s->get())) return *v;
      fail(n, key, "invalid size \"" + s->get() + "\" (e.g. \"512KiB\", \"4MiB\", \"auto\" or bytes as an integer)");
    }
    fail(n, key, "must be a size string such as \"4MiB\", \"auto\", or an integer number of bytes");
  }

  // collector.memory_budget: "auto" (the daemon's own limit), "off", or a
  // size of at least the daemon's base reserve.
  uint64_t memory_budget(const toml::node& n) const {
    const std::string key = "collector.memory_budget";
    if (auto s = n.as_string()) {
      if (s->get() == "auto") return CollectorConfig::kMemoryBudgetAuto;
      if (s->get() == "off") return 0;
      const auto v = parse_size(s->get());
      if (!v) fail(n, key, "invalid size \"" + s->get() + "\" (e.g. \"512MiB\", \"auto\" or \"off\")");
      if (*v < (32u << 20)) fail(n, key, "must be at least 32MiB (the daemon's own needs come first)");
      return *v;
    }
    fail(n, key, "must be \"auto\", \"off\" or a size string such as \"512MiB\"");
  }

  int64_t integer(const toml::node& n, const std::string& key, int64_t lo, int64_t hi) const {
    auto i = n.as_integer();
    if (!i) fail(n, key, "must be an integer");
    if (i->get() < lo || i->get() > hi)
      fail(n, key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return i->get();
  }

  Glob glob(const toml::node& n, const std::string& key) const {
    auto s = n.as_string();
    if (!s) fail(n, key, "must be a glob string");
    std::string err;
    auto g = Glob::compile(s->get(), &err);
    if (!g) fail(n, key, "invalid glob: " + err);
    return *g;
  }

  std::vector<Glob> globs(const toml::node& n, const std::string& key) const {
    auto arr = n.as_array();
    if (!arr) fail(n, key, "must be an array of glob strings");
    std::vector<Glob> out;
    for (size_t i = 0; i < arr->size(); ++i) out.push_back(glob((*arr)[i], key + "[" + std::to_string(i + 1) + "]"));
    return out;
  }

  StatFilter stats(const toml::node& n, const std::string& key) const {
    auto arr = n.as_array();
    if (!arr) fail(n, key, "must be an array of memory.stat key names, or [\"*\"] for all");
    StatFilter f;
    for (size_t i = 0; i < arr->size(); ++i) {
      const auto& el = (*arr)[i];
      const std::string ek = key + "[" + std::to_string(i + 1) + "]";
      auto s = el.as_string();
      if (!s) fail(el, ek, "must be a string");
      const std::string& name = s->get();
      if (name == "*") {
        f.all = true;
        continue;
      }
      if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
        fail(el, ek, "\"" + name + "\" is not a memory.stat key name (lowercase letters, digits, '_')");
      if (auto idx = parse::stat_key_table().find(name))
        f.known.set(*idx);
      else
        f.unknown_names.push_back(name);  // a key a newer kernel may print
    }
    return f;
  }

  void load_collector(const toml::table& t, CollectorConfig& c) const {
    check_keys(t, "collector", {"root", "probe_interval", "rescan_interval", "limits_max_age", "max_depth", "max_cgroups",
                                "memory_budget", "max_stat_reads_per_second", "include", "exclude"});
    if (auto* n = t.get("max_stat_reads_per_second")) {
      auto v = n->value<double>();
      if (!(n->is_number()) || !v || *v < 0 || *v > 1e9)
        fail(*n, "collector.max_stat_reads_per_second", "must be a number >= 0 (0 = no budget)");
      c.max_stat_reads_per_second = *v;
    }
    if (auto* n = t.get("root")) {
      auto s = n->as_string();
      if (!s || s->get().empty() || s->get()[0] != '/') fail(*n, "collector.root", "must be an absolute path");
      c.root = s->get();
    }
    if (auto* n = t.get("probe_interval")) c.probe_interval = duration(*n, "collector.probe_interval");
    if (auto* n = t.get("rescan_interval")) c.rescan_interval = duration(*n, "collector.rescan_interval");
    if (auto* n = t.get("limits_max_age")) c.limits_max_age = duration(*n, "collector.limits_max_age", true);
    if (auto* n = t.get("max_depth")) c.max_depth = static_cast<int>(integer(*n, "collector.max_depth", 0, 64));
    if (auto* n = t.get("max_cgroups"))
      c.max_cgroups = static_cast<uint64_t>(integer(*n, "collector.max_cgroups", 1, 10'000'000));
    if (auto* n = t.get("memory_budget")) c.memory_budget = memory_budget(*n);
    if (auto* n = t.get("include")) c.include = globs(*n, "collector.include");
    if (auto* n = t.get("exclude")) c.exclude = globs(*n, "collector.exclude");
  }

  Profile profile(const toml::node& n, const std::string& key) const {
    auto s = n.as_string();
    for (auto p : {Profile::lean, Profile::standard, Profile::full, Profile::cadvisor})
      if (s && s->get() == profile_name(p)) return p;
    fail(n, key, "must be \"lean\", \"default\", \"full\" or \"cadvisor\"");
  }

  // A Unix socket path: absolute and short enough for sockaddr_un, or "" (off).
  // `grows`: how much longer the path may become once specifiers are filled in.
  std::string socket_path(const toml::node& n, const std::string& key, size_t grows = 0) const {
    auto s = n.as_string();
    if (!s || (!s->get().empty() && s->get()[0] != '/')) fail(n, key, "must be an absolute path, or \"\" to disable");
    if (s->get().size() + grows > 107) fail(n, key, "longer than a Unix socket path can be (107 bytes)");
    return s->get();
  }

  // containerd namespaces: its own rule for names (a DNS label: lower-case
  // letters, digits, '.', '-', starting with a letter or digit), at most 16.
  std::vector<std::string> namespaces(const toml::node& n, const std::string& key) const {
    auto arr = n.as_array();
    if (!arr || arr->empty() || arr->size() > 16) fail(n, key, "must be an array of 1 to 16 containerd namespaces");
    std::vector<std::string> out;
    for (size_t i = 0; i < arr->size(); ++i) {
      const auto& el = (*arr)[i];
      auto s = el.as_string();
      const bool ok = s && !s->get().empty() && s->get().size() <= 76 && std::isalnum(static_cast<unsigned char>(s->get()[0])) &&
                      std::all_of(s->get().begin(), s->get().end(), [](char ch) {
                        return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
                      });
      if (!ok) fail(el, key + "[" + std::to_string(i + 1) + "]", "not a containerd namespace (e.g. \"k8s.io\", \"default\")");
      out.push_back(s->get());
    }
    return out;
  }

  std::vector<std::string> identity_labels(const toml::node& n, const std::string& key) const {
    auto arr = n.as_array();
    if (!arr) fail(n, key, "must be an array of identity label names");
    std::vector<std::string> wanted;
    for (size_t i = 0; i < arr->size(); ++i) {
      const auto& el = (*arr)[i];
      auto s = el.as_string();
      bool known = false;
      for (auto l : kIdentityLabels) known = known || (s && s->get() == l);
      if (!known) {
        std::string list;
        for (auto l : kIdentityLabels) list += (list.empty() ? "" : ", ") + std::string(l);
        fail(el, key + "[" + std::to_string(i + 1) + "]", "not an identity label (one of: " + list + ")");
      }
      wanted.push_back(s->get());
    }
    std::vector<std::string> ordered;  // table order, no duplicates
    for (auto l : kIdentityLabels)
      for (const auto& w : wanted)
        if (w == l) {
          ordered.emplace_back(l);
          break;
        }
    return ordered;
  }

  void load_containers(const toml::table& t, ContainersConfig& cc) const {
    check_keys(t, "containers", {"records_dir", "docker_socket", "podman_socket", "podman_user_socket", "engine_timeout",
                                  "containerd_socket", "containerd_namespaces"});
    if (auto* n = t.get("records_dir")) {
      auto v = n->as_string();
      if (!v || (!v->get().empty() && v->get()[0] != '/'))
        fail(*n, "containers.records_dir", "must be an absolute path, or \"\" to disable");
      cc.records_dir = v->get();
    }
    if (auto* n = t.get("docker_socket")) cc.docker_socket = socket_path(*n, "containers.docker_socket");
    if (auto* n = t.get("podman_socket")) cc.podman_socket = socket_path(*n, "containers.podman_socket");
    if (auto* n = t.get("podman_user_socket")) {
      cc.podman_user_socket = socket_path(*n, "containers.podman_user_socket", 10 - 2);  // %U: up to 10 digits
      if (!cc.podman_user_socket.empty() && cc.podman_user_socket.find("%U") == std::string::npos)
        fail(*n, "containers.podman_user_socket", "must contain %U, the user's uid (e.g. \"/run/podman-api/users/%U/podman.sock\")");
    }
    if (auto* n = t.get("containerd_socket"))
      cc.containerd_socket = socket_path(*n, "containers.containerd_socket");
    if (auto* n = t.get("containerd_namespaces"))
      cc.containerd_namespaces = namespaces(*n, "containers.containerd_namespaces");
    if (auto* n = t.get("engine_timeout")) {
      cc.engine_timeout = duration(*n, "containers.engine_timeout");
      if (cc.engine_timeout > std::chrono::seconds(30))
        fail(*n, "containers.engine_timeout", "must be at most 30s (a lookup holds the engine worker that long)");
    }
  }

  void load_web(const toml::table& t, WebConfig& w) const {
    check_keys(t, "web", {"listen", "refresh_api", "max_connections", "max_open_connections", "max_connections_per_client",
                           "request_timeout", "idle_timeout"});
    if (auto* n = t.get("listen")) {
      auto arr = n->as_array();
      if (!arr || arr->empty()) fail(*n, "web.listen", "must be a non-empty array of addresses such as \":9756\"");
      w.listen.clear();
      for (size_t i = 0; i < arr->size(); ++i) {
        const std::string key = "web.listen[" + std::to_string(i + 1) + "]";
        auto s = (*arr)[i].as_string();
        if (!s) fail((*arr)[i], key, "must be a string");
        std::string err;
        if (!valid_listen_address(s->get(), err)) fail((*arr)[i], key, err);
        w.listen.push_back(s->get());
      }
    }
    if (auto* n = t.get("refresh_api")) {
      auto b = n->as_boolean();
      if (!b) fail(*n, "web.refresh_api", "must be true or false");
      w.refresh_api = b->get();
    }
    if (auto* n = t.get("max_connections"))
      w.max_connections = static_cast<uint32_t>(integer(*n, "web.max_connections", 1, 1024));
    if (auto* n = t.get("max_open_connections"))
      w.max_open_connections = static_cast<uint32_t>(integer(*n, "web.max_open_connections", 16, 65536));
    if (auto* n = t.get("max_connections_per_client"))
      w.max_connections_per_client = static_cast<uint32_t>(integer(*n, "web.max_connections_per_client", 1, 65536));
    if (auto* n = t.get("idle_timeout")) {
      w.idle_timeout = duration(*n, "web.idle_timeout", true);
      if (w.idle_timeout > std::chrono::minutes(5)) fail(*n, "web.idle_timeout", "must be at most 5m (0 closes after every response)");
    }
    if (auto* n = t.get("request_timeout")) {
      w.request_timeout = duration(*n, "web.request_timeout");
      if (w.request_timeout < std::chrono::milliseconds(100) || w.request_timeout > std::chrono::minutes(5))
        fail(*n, "web.request_timeout", "must be between 100ms and 5m");
    }
  }

  void load_defaults(const toml::table& t, Settings& s) const {
    check_keys(t, "defaults", {"threshold", "max_age", "stats"});
    if (auto* n = t.get("threshold")) s.threshold = size(*n, "defaults.threshold");
    if (auto* n = t.get("max_age")) s.max_age = duration(*n, "defaults.max_age");
    if (auto* n = t.get("stats")) s.stats = stats(*n, "defaults.stats");
  }

  Rule load_rule(const toml::table& t, const std::string& path) const {
    check_keys(t, path, {"match", "name", "threshold", "max_age", "stats"});
    auto* m = t.get("match");
    if (!m) throw ConfigError(file_, t.source().begin.line, t.source().begin.column, path + ".match",
                              "missing: every rule needs a glob to match cgroup paths");
    Rule r{glob(*m, path + ".match"), {}, {}, {}, {}};
    if (auto* n = t.get("name")) {
      auto s = n->as_string();
      if (!s || s->get().empty() || s->get().size() > 128)
        fail(*n, path + ".name", "must be a non-empty string of at most 128 bytes");
      r.name = s->get();
    }
    if (auto* n = t.get("threshold")) r.threshold = size(*n, path + ".threshold");
    if (auto* n = t.get("max_age")) r.max_age = duration(*n, path + ".max_age");
    if (auto* n = t.get("stats")) r.stats = stats(*n, path + ".stats");
    return r;
  }

  std::string file_;
  HostFacts host_;
};

std::string describe_stats(const StatFilter& f) {
  if (f.all) return "all";
  std::string out;
  for (size_t i = 0; i < parse::stat_keys().size(); ++i)
    if (f.known.test(i)) out += (out.empty() ? "" : ",") + std::string(parse::stat_keys()[i].name);
  for (const auto& n : f.unknown_names) out += (out.empty() ? "" : ",") + n;
  return out.empty() ? "none" : out;
}

}  // namespace

Config load_string(std::string_view text, const std::string& source_name, const HostFacts& host) {
  return Loader(source_name, host).load(text);
}

Config load_file(const std::string& path, const HostFacts& host) {
  auto text = sys::read_file(path, kMaxConfigBytes);
  if (!text.ok()) throw ConfigError(path, 0, 0, "", std::string("cannot open: ") + std::strerror(text.err()));
  return load_string(text.value(), path, host);
}

std::string describe(const Config& c) {
  std::ostringstream o;
  o << "config: " << (c.source_path.empty() ? "(built-in defaults)" : c.source_path) << "\n";
  o << "collector: root=" << (c.collector.root.empty() ? "(auto)" : c.collector.root)
    << " probe_interval=" << format_duration(c.collector.probe_interval)
    << " rescan_interval=" << format_duration(c.collector.rescan_interval)
    << " limits_max_age=" << format_duration(c.collector.limits_max_age)
    << " max_depth=" << c.collector.max_depth << " max_cgroups=" << c.collector.max_cgroups << " memory_budget="
    << (c.collector.memory_budget == CollectorConfig::kMemoryBudgetAuto ? std::string("auto")
        : c.collector.memory_budget == 0                                ? std::string("off")
                                                                         : format_size(c.collector.memory_budget))
    << " max_stat_reads_per_second=" << (c.collector.max_stat_reads_per_second > 0 ? std::to_string(c.collector.max_stat_reads_per_second) : "off") << "\n";
  o << "  include:";
  if (c.collector.include.empty()) o << " (everything)";
  for (const auto& g : c.collector.include) o << " " << g.pattern();
  o << "\n  exclude:";
  if (c.collector.exclude.empty()) o << " (nothing)";
  for (const auto& g : c.collector.exclude) o << " " << g.pattern();
  o << "\n";
  o << "web: listen=";
  for (size_t i = 0; i < c.web.listen.size(); ++i) o << (i ? "," : "") << c.web.listen[i];
  o << " refresh_api=" << (c.web.refresh_api ? "on" : "off") << " max_connections=" << c.web.max_connections
    << " max_open_connections=" << c.web.max_open_connections << " max_connections_per_client=" << c.web.max_connections_per_client
    << " request_timeout=" << format_duration(c.web.request_timeout)
    << " idle_timeout=" << format_duration(c.web.idle_timeout) << "\n";
  o << "containers: records_dir=" << (c.containers.records_dir.empty() ? "(off)" : c.containers.records_dir);
  o << " docker_socket=" << (c.containers.docker_socket.empty() ? "(off)" : c.containers.docker_socket);
  o << " podman_socket=" << (c.containers.podman_socket.empty() ? "(off)" : c.containers.podman_socket);
  o << " podman_user_socket=" << (c.containers.podman_user_socket.empty() ? "(off)" : c.containers.podman_user_socket);
  o << "\n";
  o << "metrics: profile=" << profile_name(c.metrics.profile) << " identity_labels=";
  for (size_t i = 0; i < c.metrics.identity_labels.size(); ++i) o << (i ? "," : "") << c.metrics.identity_labels[i];
  if (c.metrics.profile == Profile::cadvisor) o << "(none; the kubelet's labels on every series, join memcg_cgroup_info on id)";
  else if (c.metrics.identity_labels.empty()) o << "(none; join memcg_cgroup_info on cgroup_id)";
  o << " removed_retention=" << format_duration(c.metrics.removed_retention) << " removed_max=" << c.metrics.removed_max;
  o << "\n";
  for (const auto& s : c.resolved())
    o << s->source << ": name=" << s->name << " threshold=" << format_size(s->threshold)
      << " max_age=" << format_duration(s->max_age) << " stats=" << describe_stats(s->stats) << "\n";
  o << "rules: first match wins; unmatched cgroups use the defaults\n";
  return o.str();
}

}  // namespace memcg::config
