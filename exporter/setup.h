// Startup shared by every mode: load the configuration and find the root.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "exporter/cli.h"

namespace memcg::exporter {

// Loads --config (or the built-in defaults). On error returns nullopt and
// sets `error` to "file:line:col: key: message" (exit 78 at startup).
std::optional<config::Config> load_config(const std::string& path, std::string& error);

// What a SIGHUP does with the configuration: the file loaded again, or the
// error that keeps the running one. `listen` (--web.listen-address) replaces
// the file's web.listen as at startup. Settings that only apply at a restart
// (the listener's) are named in `restart_needed`.
struct Reload {
  std::optional<config::Config> config;  // nullopt: keep the running configuration
  std::string error;                     // why, as "file:line:col: key: message"
  std::string restart_needed;            // e.g. "web.listen, web.max_connections"; "" if none
};
Reload reload_config(const std::string& path, const std::vector<std::string>& listen, const config::Config& running);

// The cgroup2 root to read: --root, else [collector] root, else the cgroup2
// mount from /proc/self/mountinfo. A root not given with --root must be a
// cgroup2 filesystem. Either way it must offer the memory controller.
// On failure `error` says why in one line (exit 69).
std::optional<std::string> resolve_root(const Options& opts, const config::Config& cfg, std::string& error);

}  // namespace memcg::exporter
