// memcg-exporter: entry point. Parses options, loads configuration, finds the
// cgroup2 root and runs either one pass (--once) or the daemon.
#include <malloc.h>
#include <sys/prctl.h>

#include <csignal>
#include <iostream>
#include <string>

#include "config/load.h"
#include "exporter/cli.h"
#include "exporter/daemon.h"
#include "exporter/log.h"
#include "exporter/exposition/metrics.h"
#include "exporter/setup.h"
#include "base/version.h"
#include "exporter/http/web_config.h"
#include "plugin/cgroupfs/rlimit.h"
#include "plugin/collector.h"
#include "plugin/snapshot_json.h"

using namespace memcg;
using namespace memcg::exporter;

namespace {

// --check-config: the configuration as understood, and its bill: series per
// cgroup under each rule, counted through the metric table.
int check_config(const config::Config& cfg, const std::optional<WebConfigFile>& web_file) {
  std::cout << config::describe(cfg);
  const bool read_budget = cfg.collector.max_stat_reads_per_second > 0;
  for (const auto& s : cfg.resolved()) {
    const SeriesBudget b = series_per_cgroup(*s, cfg.metrics.profile, read_budget);
    std::cout << "series per cgroup (" << s->source << ", profile " << config::profile_name(cfg.metrics.profile)
              << "): " << b.floor << " with no limit set and only max_age reads, at most " << b.most
              << (b.plus_unknown_keys ? " plus any memory.stat key the kernel adds" : "") << "\n";
  }
  if (web_file)
    std::cout << "web config " << web_file->path << ": tls=" << (web_file->tls ? "on" : "off")
              << " basic_auth_users=" << web_file->basic_auth_users.size() << " headers=" << web_file->headers.size() << "\n";
  return 0;
}

// --once: one pass, printed as the JSON API's document.
int run_once(const std::string& root, const config::Config& cfg) {
  Collector collector(root, cfg);
  const PassReport report = collector.run_pass();
  for (const auto& e : report.errors) std::cerr << "memcg-exporter: " << e.message() << "\n";
  auto snap = collector.latest();
  std::string out;
  render_snapshot_json(*snap, snap->taken_at + snap->pass_duration, out);
  std::cout << out;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Opt out of transparent huge pages: on hosts with THP "always", every
  // touched thread stack and per-thread malloc arena would be backed by 2 MiB
  // pages (measured: ~250 MB for 66 threads under Debian's cloud kernel, vs
  // ~7 MB without). The exporter has no large hot working set to gain from them.
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
  // One malloc arena for the main thread and one shared by everything else:
  // glibc otherwise gives each of the HTTP workers an arena of its own,
  // each keeping the fragments of the scrapes it served, and RSS climbed for
  // minutes as scrapes rotated over the workers (56 MB after 2 min of churn
  // and continuous scrapes of 300 cgroups). Scrapes are not malloc-bound.
  mallopt(M_ARENA_MAX, 2);
  // A client that resets its connection must not end the process: OpenSSL
  // writes TLS records with write(2), which raises SIGPIPE there (the gate's
  // own plain writes pass MSG_NOSIGNAL); EPIPE is handled where it returns.
  std::signal(SIGPIPE, SIG_IGN);
  std::string error;
  auto opts = parse_args(argc, argv, error);
  if (!opts) {
    std::cerr << "memcg-exporter: " << error << "\n";
    return kExitUsage;
  }
  if (opts->help) {
    std::cout << usage();
    return 0;
  }
  if (opts->version) {
    std::cout << "memcg-exporter " << MEMCG_VERSION << " (revision " << MEMCG_REVISION << ")\n";
    return 0;
  }
  set_log_level(opts->log_level);

  auto cfg = load_config(opts->config_path, error);
  if (!cfg) {
    std::cerr << "memcg-exporter: configuration error: " << error << "\n";
    return kExitConfig;
  }
  std::optional<WebConfigFile> web_file;
  if (!opts->web_config_path.empty()) {
    try {
      web_file = load_web_config(opts->web_config_path);
    } catch (const WebConfigError& e) {
      std::cerr << "memcg-exporter: web configuration error: " << e.what() << "\n";
      return kExitConfig;
    }
  }
  if (opts->check_config) return check_config(*cfg, web_file);
  auto root = resolve_root(*opts, *cfg, error);
  if (!root) {
    std::cerr << "memcg-exporter: " << error << "\n";
    return kExitUnavailable;
  }
  const auto fds = cgroupfs::raise_fd_limit();
  if (opts->once) return run_once(*root, *cfg);
  return run_daemon(*opts, std::move(*cfg), *root, fds, web_file ? &*web_file : nullptr);
}
