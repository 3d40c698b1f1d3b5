#include "exporter/daemon.h"

#include <signal.h>

#include <cerrno>
#include <ctime>
#include <string>

#include "exporter/log.h"
#include "exporter/setup.h"
#include "exporter/version.h"
#include "plugin/collector.h"

namespace memcg::exporter {
namespace {

std::string describe_pass(const PassReport& r, const Snapshot& s) {
  return "pass=" + std::to_string(s.pass) + " cgroups=" + std::to_string(s.cgroups.size()) +
         " reads=" + std::to_string(r.reads) + " skips=" + std::to_string(r.skips) +
         " duration=" + std::to_string(to_seconds(s.pass_duration)) + "s";
}

void log_report(const PassReport& r, uint64_t& last_limited) {
  for (const auto& e : r.errors) log_warning(e.message());
  if (r.limited != last_limited) {
    if (r.limited > 0)
      log_warning(std::to_string(r.limited) + " cgroups are not collected: collector.max_cgroups reached");
    last_limited = r.limited;
  }
  if (!r.root_ok) log_error("the cgroup root cannot be read; serving the last data collected");
}

}  // namespace

int run_daemon(const Options& opts, config::Config cfg, const std::string& root, const cgroupfs::FdLimit& fds) {
  // Signals are taken synchronously by the loop (sigtimedwait), so no handler
  // ever runs on another thread's stack and shutdown needs no self-pipe.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  log_info(std::string("memcg-exporter ") + MEMCG_VERSION + " starting: root=" + root +
           " fd_limit=" + std::to_string(fds.soft));
  Collector collector(root, std::move(cfg));
  uint64_t last_limited = 0;
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    const PassReport report = collector.run_pass();
    log_report(report, last_limited);
    log_debug(describe_pass(report, *collector.latest()));

    next += collector.config().collector.probe_interval;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;  // fell behind: do not run passes back to back to catch up
    for (;;) {
      const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(next - std::chrono::steady_clock::now());
      if (wait.count() <= 0) break;
      timespec ts{static_cast<time_t>(wait.count() / 1'000'000'000), static_cast<long>(wait.count() % 1'000'000'000)};
      const int sig = sigtimedwait(&sigs, nullptr, &ts);
      if (sig == SIGTERM || sig == SIGINT) {
        log_info("shutting down");
        return 0;
      }
      if (sig == SIGHUP) {
        const std::string path = opts.config_path;
        log_info("reloading configuration" + (path.empty() ? std::string() : " from " + path));
        if (auto next_cfg = load_config(path)) {
          collector.set_config(std::move(*next_cfg));
          log_info("configuration reloaded");
        } else {
          log_error("configuration reload failed; keeping the previous configuration");
        }
      }
    }
  }
}

}  // namespace memcg::exporter
