// Command-line options of memcg-exporter.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memcg::exporter {

enum class LogLevel { debug = 7, info = 6, notice = 5, warning = 4, error = 3 };

struct Options {
  std::string config_path;   // empty: built-in defaults
  std::string root;          // empty: config or auto-detect
  bool once = false;
  bool check_config = false;
  bool help = false;
  bool version = false;
  LogLevel log_level = LogLevel::info;
  std::vector<std::string> listen;  // --web.listen-address (repeatable)
  std::string web_config_path;      // --web.config.file; empty: plain HTTP, no auth
};

// Parses argv. On error returns nullopt and sets `error` (exit code 64).
std::optional<Options> parse_args(int argc, char** argv, std::string& error);

std::string usage();

inline constexpr int kExitUsage = 64;        // EX_USAGE
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: no cgroup v2 memory controller
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE
inline constexpr int kExitConfig = 78;       // EX_CONFIG

}  // namespace memcg::exporter
