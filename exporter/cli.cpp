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

std::optional<Options> parse_args(int argc, char** argv, std::string& error) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::string_view inline_value;
    bool has_inline = false;
    if (a.starts_with("--")) {
      if (auto eq = a.find('='); eq != std::string_view::npos) {
        inline_value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_inline = true;
      }
    }
    auto value = [&](std::string& out) {
      if (has_inline) {
        out = std::string(inline_value);
        return true;
      }
      if (i + 1 >= argc) {
        error = std::string(a) + " needs a value";
        return false;
      }
      out = argv[++i];
      return true;
    };
    auto flag = [&](bool& out) {
      if (has_inline) {
        error = std::string(a) + " takes no value";
        return false;
      }
      out = true;
      return true;
    };
    bool ok = true;
    if (a == "--config" || a == "-c") {
      ok = value(o.config_path);
    } else if (a == "--root") {
      ok = value(o.root);
    } else if (a == "--web.listen-address") {
      std::string v;
      ok = value(v);
      if (ok) o.listen.push_back(v);
    } else if (a == "--web.config.file") {
      ok = value(o.web_config_path);
    } else if (a == "--once") {
      ok = flag(o.once);
    } else if (a == "--check-config") {
      ok = flag(o.check_config);
    } else if (a == "--help" || a == "-h") {
      ok = flag(o.help);
    } else if (a == "--version") {
      ok = flag(o.version);
    } else if (a == "--log-level") {
      std::string v;
      ok = value(v);
      if (ok) {
        if (v == "debug") o.log_level = LogLevel::debug;
        else if (v == "info") o.log_level = LogLevel::info;
        else if (v == "notice") o.log_level = LogLevel::notice;
        else if (v == "warning") o.log_level = LogLevel::warning;
        else if (v == "error") o.log_level = LogLevel::error;
        else {
          error = "unknown log level \"" + v + "\" (debug, info, notice, warning, error)";
          ok = false;
        }
      }
    } else {
      error = "unknown argument \"" + std::string(argv[i]) + "\" (see --help)";
      ok = false;
    }
    if (!ok) return std::nullopt;
  }
  if (o.once && o.check_config) {
    error = "--once and --check-config exclude each other";
    return std::nullopt;
  }
  return o;
}

}  // namespace memcg::exporter
