#include "exporter/cli.h"

#include <string_view>

namespace memcg::exporter {

std::string usage() {
  return R"(Usage: memcg-exporter [OPTIONS]

Exports cgroup v2 memory statistics to Prometheus, re-reading the costly
memory.stat only when cheap probes show enough change, an event, or age.

Options:
  --config FILE             TOML configuration (default: built-in defaults)
  --root DIR                cgroup2 mount to read (default: [collector] root, or
                            found in /proc/self/mountinfo; a directory that is not
                            cgroup2 is accepted only when given here, e.g. a fixture tree)
  --web.listen-address ADDR address to serve metrics on, e.g. ":9756" or
                            "127.0.0.1:9756" (repeatable; default :9756)
  --web.config.file FILE    TLS, client certificates, basic auth and headers, in
                            the Prometheus web-config format (YAML)
  --once                    run one full collection pass, print it as JSON, exit
  --check-config            validate the configuration, print the effective rules and
                            the series per cgroup they make, exit
  --log-level LEVEL         debug, info, notice, warning or error (default info)
  --version                 print the version and exit
  --help                    print this help and exit

Exit status: 0 ok, 64 usage error, 69 no cgroup v2 memory controller,
78 configuration error.
)";
}

namespace {

// One command-line option: its names, whether it takes a value, and what it sets.
struct OptionDef {
  std::string_view name, alias;
  bool takes_value;
  bool (*apply)(Options& o, const std::string& value, std::string& error);
};

bool set_log_level(Options& o, const std::string& v, std::string& error) {
  if (v == "debug") o.log_level = LogLevel::debug;
  else if (v == "info") o.log_level = LogLevel::info;
  else if (v == "notice") o.log_level = LogLevel::notice;
  else if (v == "warning") o.log_level = LogLevel::warning;
  else if (v == "error") o.log_level = LogLevel::error;
  else {
    error = "unknown log level \"" + v + "\" (debug, info, notice, warning, error)";
    return false;
  }
  return true;
}

constexpr OptionDef kOptions[] = {
    {"--config", "-c", true, [](Options& o, const std::string& v, std::string&) { o.config_path = v; return true; }},
    {"--root", "", true, [](Options& o, const std::string& v, std::string&) { o.root = v; return true; }},
    {"--web.listen-address", "", true, [](Options& o, const std::string& v, std::string&) { o.listen.push_back(v); return true; }},
    {"--web.config.file", "", true, [](Options& o, const std::string& v, std::string&) { o.web_config_path = v; return true; }},
    {"--once", "", false, [](Options& o, const std::string&, std::string&) { return o.once = true; }},
    {"--check-config", "", false, [](Options& o, const std::string&, std::string&) { return o.check_config = true; }},
    {"--help", "-h", false, [](Options& o, const std::string&, std::string&) { return o.help = true; }},
    {"--version", "", false, [](Options& o, const std::string&, std::string&) { return o.version = true; }},
    {"--log-level", "", true, set_log_level},
};

const OptionDef* find_option(std::string_view a) {
  for (const auto& d : kOptions)
    if (a == d.name || (!d.alias.empty() && a == d.alias)) return &d;
  return nullptr;
}

}  // namespace

std::optional<Options> parse_args(int argc, char** argv, std::string& error) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::optional<std::string> inline_value;  // --name=value
    if (const size_t eq = a.find('='); a.starts_with("--") && eq != std::string_view::npos) {
      inline_value = std::string(a.substr(eq + 1));
      a = a.substr(0, eq);
    }
    const OptionDef* def = find_option(a);
    if (!def) {
      error = "unknown argument \"" + std::string(argv[i]) + "\" (see --help)";
      return std::nullopt;
    }
    std::string value;
    if (def->takes_value && inline_value) {
      value = *inline_value;
    } else if (def->takes_value) {
      if (i + 1 >= argc) {
        error = std::string(a) + " needs a value";
        return std::nullopt;
      }
      value = argv[++i];
    } else if (inline_value) {
      error = std::string(a) + " takes no value";
      return std::nullopt;
    }
    if (!def->apply(o, value, error)) return std::nullopt;
  }
  if (o.once && o.check_config) {
    error = "--once and --check-config exclude each other";
    return std::nullopt;
  }
  return o;
}

}  // namespace memcg::exporter
