#include "exporter/setup.h"

#include <cstring>

#include "config/load.h"
#include "plugin/cgroupfs/mount.h"

namespace memcg::exporter {

std::optional<config::Config> load_config(const std::string& path, std::string& error) {
  try {
    if (path.empty()) return config::Config::builtin(config::HostFacts::probe());
    return config::load_file(path, config::HostFacts::probe());
  } catch (const config::ConfigError& e) {
    error = e.what();
    return std::nullopt;
  }
}

Reload reload_config(const std::string& path, const std::vector<std::string>& listen, const config::Config& running) {
  Reload r;
  r.config = load_config(path, r.error);
  if (!r.config) return r;
  if (!listen.empty()) r.config->web.listen = listen;
  const config::WebConfig &now = running.web, &next = r.config->web;
  std::string changed;
  const auto note = [&](bool differs, const char* key) {
    if (differs) changed += (changed.empty() ? "" : ", ") + std::string(key);
  };
  note(next.listen != now.listen, "web.listen");
  note(next.max_connections != now.max_connections, "web.max_connections");
  note(next.max_open_connections != now.max_open_connections, "web.max_open_connections");
  note(next.max_connections_per_client != now.max_connections_per_client, "web.max_connections_per_client");
  note(next.request_timeout != now.request_timeout, "web.request_timeout");
  note(next.idle_timeout != now.idle_timeout, "web.idle_timeout");
  r.restart_needed = changed;
  return r;
}

std::optional<std::string> resolve_root(const Options& opts, const config::Config& cfg, std::string& error) {
  std::string root = !opts.root.empty() ? opts.root : cfg.collector.root;
  if (root.empty()) {
    auto found = cgroupfs::find_cgroup2_mount();
    if (!found) {
      error = "no cgroup v2 filesystem is mounted on this host (see /proc/self/mountinfo); "
              "memcg-exporter needs the unified hierarchy";
      return std::nullopt;
    }
    root = *found;
  }
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (opts.root.empty()) {
    const auto v2 = cgroupfs::is_cgroup2(root);
    if (!v2.ok() || !v2.value()) {
      error = !v2.ok() ? v2.message() : root + " is not a cgroup v2 filesystem (statfs type is not CGROUP2_SUPER_MAGIC)";
      return std::nullopt;
    }
  }
  if (!cgroupfs::has_memory_controller(root)) {
    error = "no cgroup v2 memory controller at " + root +
            " (cgroup.controllers does not list \"memory\": the memory controller is bound to cgroup v1 "
            "or disabled on this host)";
    return std::nullopt;
  }
  return root;
}

}  // namespace memcg::exporter
