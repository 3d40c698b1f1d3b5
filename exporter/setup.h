// Startup shared by every mode: load the configuration and find the root.
#pragma once

#include <optional>
#include <string>

#include "config/config.h"
#include "exporter/cli.h"

namespace memcg::exporter {

// Loads --config (or the built-in defaults). On error returns nullopt and
// sets `error` to "file:line:col: key: message" (exit 78 at startup).
std::optional<config::Config> load_config(const std::string& path, std::string& error);

// The cgroup2 root to read: --root, else [collector] root, else the cgroup2
// mount from /proc/self/mountinfo. A root not given with --root must be a
// cgroup2 filesystem. Either way it must offer the memory controller.
// On failure `error` says why in one line (exit 69).
std::optional<std::string> resolve_root(const Options& opts, const config::Config& cfg, std::string& error);

}  // namespace memcg::exporter
