#include "exporter/daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "exporter/http/server.h"
#include "exporter/log.h"
#include "exporter/exposition/metrics.h"
#include "exporter/notifier.h"
#include "exporter/schedule.h"
#include "exporter/setup.h"
#include "base/version.h"
#include "plugin/collector.h"
#include "base/sys/unique_fd.h"

namespace memcg::exporter {
namespace {


// How long a reader waits for the pass thread to build the snapshot it
// asked for: between passes it takes a wake-up and a copy of every cgroup's
// view (milliseconds); during a pass, the rest of the pass. A pass stuck in
// the kernel costs a scrape this much, then it is served the last snapshot.
constexpr Duration kSnapshotPatience = std::chrono::seconds(2);

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The daemon's state as the HTTP threads see it.
class Backend final : public WebBackend {
 public:
  Backend(Collector& c, config::Config cfg, Clock& clock)
      : collector_(c), clock_(clock), config_(std::make_shared<const config::Config>(std::move(cfg))),
        last_progress_(clock.now().time_since_epoch().count()) {}

  // The collector builds snapshots on demand (plugin/publication.h): a
  // reader waits for the build at most kSnapshotPatience.
  std::shared_ptr<const Snapshot> snapshot() const override { return collector_.current(kSnapshotPatience); }
  std::shared_ptr<const Snapshot> latest_snapshot() const override { return collector_.latest(); }
  std::shared_ptr<const config::Config> config() const override {
    std::lock_guard lock(config_mu_);
    return config_;
  }
  DaemonStatus& status() override { return status_; }
  TimePoint now() const override { return clock_.now(); }
  bool ready() const override { return collector_.latest()->pass > 0; }
  // Alive while passes keep completing: a pass that hangs (e.g. a read stuck
  // in the kernel) turns this false after two intervals plus 10 s of slack.
  bool healthy() const override {
    const auto last = TimePoint(Duration(last_progress_.load()));
    const auto limit = 2 * config()->collector.probe_interval + std::chrono::seconds(10);
    return clock_.now() - last < limit;
  }
  bool request_refresh(config::Glob glob) override { return collector_.request_refresh(std::move(glob)); }

  void progress() { last_progress_.store(clock_.now().time_since_epoch().count()); }
  void set_config(config::Config cfg) {
    auto next = std::make_shared<const config::Config>(std::move(cfg));
    std::lock_guard lock(config_mu_);
    config_.swap(next);
  }

 private:
  Collector& collector_;
  Clock& clock_;
  // A mutex held only to copy or swap the pointer, not
  // std::atomic<shared_ptr>: libstdc++ 12 implements that with a lock bit
  // ThreadSanitizer cannot see (the collector's snapshot does the same).
  mutable std::mutex config_mu_;
  std::shared_ptr<const config::Config> config_;
  DaemonStatus status_;
  std::atomic<Duration::rep> last_progress_;
};

std::string status_line(const PassReport& r, Duration interval) {
  const uint64_t probes = r.reads + r.skips;
  char buf[160];
  std::snprintf(buf, sizeof buf, "cgroups=%zu reads/s=%.1f skip_ratio=%.2f pass=%.1fms", r.cgroups,
                static_cast<double>(r.reads) / to_seconds(interval),
                probes ? static_cast<double>(r.skips) / static_cast<double>(probes) : 0.0,
                to_seconds(r.duration) * 1e3);
  return buf;
}

// What a pass reports that the operator must hear about, said when it
// changes rather than with every pass: a cgroup set at the edge of a limit
// must not turn the log into a stream.
class ReportLog {
 public:
  explicit ReportLog(uint64_t fd_limit) : fd_limit_(fd_limit) {}

  void operator()(const PassReport& r, const Snapshot& s) {
    for (const auto& e : r.errors) log_warning(e.message());
    if (r.limited != limited_) {
      if (r.limited > 0)
        log_warning(std::to_string(r.limited) + " cgroups are not collected: collector.max_cgroups reached");
      limited_ = r.limited;
    }
    // Once when cgroups start being left out for want of descriptors, once
    // when they all fit again; memcg_exporter_cgroups_left_out has the count.
    if (r.left_out.fd_budget > 0 && left_out_.fd_budget == 0)
      log_warning(std::to_string(r.left_out.fd_budget) + " cgroups are not collected: their descriptors (" +
                  std::to_string(kMinFdsPerCgroup) + " each) do not fit in the fd budget (" +
                  std::to_string(s.cgroup_fd_budget) + " of RLIMIT_NOFILE " + std::to_string(fd_limit_) +
                  "); the collected ones stay, the rest are added as room frees up. Raise LimitNOFILE= (docs/operations.md: Sizing)");
    if (r.left_out.memory_budget > 0 && left_out_.memory_budget == 0)
      log_warning(std::to_string(r.left_out.memory_budget) + " cgroups are not collected: their descriptors (" +
                  std::to_string(kMinFdsPerCgroup) + " each, " + std::to_string(cgroupfs::kMemoryPerFd >> 10) +
                  " KiB apiece) do not fit in the daemon's memory limit (" + std::to_string(s.memory_budget >> 20) +
                  " MiB: " + std::to_string(s.cgroup_fd_budget) + " descriptors after " +
                  std::to_string(cgroupfs::kBaseMemoryReserve >> 20) + " MiB for the daemon); the collected ones stay, the rest are added as room frees up. "
                  "Raise MemoryMax= or the pod's memory limit (docs/operations.md: Sizing)");
    if (r.left_out.fds_exhausted > 0 && left_out_.fds_exhausted == 0)
      log_warning(std::to_string(r.left_out.fds_exhausted) +
                  " cgroups are not collected now: the kernel refused descriptors (EMFILE, ENFILE or ENOMEM); "
                  "the collected ones stay, the rest are tried at every rescan");
    if (r.left_out.total() == 0 && left_out_.total() > 0) log_notice("every cgroup found is collected again");
    left_out_ = r.left_out;
    // Once when the first cgroup's limit files cannot be watched, once when
    // all are again; memcg_exporter_cgroups_limits_watched has the count.
    if (r.unwatched > 0 && unwatched_ == 0)
      log_notice(std::to_string(r.unwatched) + " cgroups' limit files cannot be watched (inotify_add_watch: " +
                 std::strerror(r.watch_error) + (r.watch_error == ENOSPC ? "; raise fs.inotify.max_user_watches" : "") +
                 "): their limits are re-read every collector.limits_max_age");
    if (r.unwatched == 0 && unwatched_ > 0) log_notice("every collected cgroup's limit files are watched again");
    unwatched_ = r.unwatched;
    if (r.root_ok != root_ok_) {
      if (!r.root_ok) log_error("the cgroup root cannot be read; serving the last data collected");
      else log_notice("the cgroup root is readable again");
      root_ok_ = r.root_ok;
    }
  }

 private:
  uint64_t fd_limit_;
  uint64_t limited_ = 0;
  LeftOut left_out_;
  uint64_t unwatched_ = 0;
  bool root_ok_ = true;
};

// What the kernel adds to every memory.stat value's staleness, said once.
std::shared_ptr<const cgroupfs::KernelFacts> probe_kernel(const std::string& root) {
  auto k = std::make_shared<const cgroupfs::KernelFacts>(cgroupfs::probe_kernel(root, cgroupfs::kernel_release(), config::HostFacts::probe(), cgroupfs::root_fs(root)));
  std::string present;
  for (const auto& f : k->features)
    if (f.present) present += (present.empty() ? "" : ",") + std::string(f.name);
  log_info("kernel " + k->release + ": memory.stat may lag by " + std::to_string(k->stat_lag_bytes() / 1024) +
           " KiB (flush threshold " + std::to_string(k->flush_threshold_updates()) + " updates: 64 x " +
           std::to_string(k->host.online_cpus) + " online CPUs" + (k->has("stat_flush_per_cgroup") ? ", per cgroup subtree" : ", host-wide") +
           "); features: " + (present.empty() ? "none" : present) +
           (k->root_fs == cgroupfs::RootFs::cgroup2fs ? "" : "; the root is not cgroup2fs: no cgroup file is written"));
  return k;
}

std::string describe_ports(const HttpServer& http) {
  std::string out;
  for (const auto& p : http.ports()) out += (out.empty() ? "" : " ") + std::string("port=") + std::to_string(p.port) + (p.ipv6 ? "(ipv6+ipv4)" : "");
  return out;
}

// The memory limit the collected cgroups' descriptors are held within: the
// configuration's collector.memory_budget, or the daemon's own cgroup's
// (read at start and at every reload, so a changed MemoryMax= is followed
// after a SIGHUP). Said once each time; an unknown limit leaves RLIMIT_NOFILE
// alone to size the collection.
void apply_memory_budget(const config::CollectorConfig& c, Collector& collector) {
  uint64_t bytes = c.memory_budget;
  std::string source = "collector.memory_budget";
  if (bytes == config::CollectorConfig::kMemoryBudgetAuto) {
    bytes = 0;
    const auto own = cgroupfs::own_memory_limit();
    if (!own.ok())
      log_notice("the daemon's own memory limit is unknown (" + own.message() + "): the collection is sized by RLIMIT_NOFILE only");
    else if (own.value()) {
      bytes = own.value()->bytes;
      source = own.value()->file;
    }
  }
  collector.set_memory_budget(bytes);
  if (bytes == 0) return;
  const uint64_t fds = cgroupfs::memory_fd_budget(bytes);
  log_info("memory limit " + std::to_string(bytes >> 20) + " MiB (" + source + "): room for " + std::to_string(fds) +
           " cgroup descriptors, about " + std::to_string(fds / kMaxFdsPerCgroup) + " to " +
           std::to_string(fds / kMinFdsPerCgroup) + " cgroups");
}

// SIGHUP: the configuration file, then the web config file. A bad file keeps
// what runs (and says so in memcg_exporter_reload_success).
void reload(const Options& opts, Collector& collector, Backend& backend, PassSchedule& schedule, HttpServer& http) {
  log_info("reloading configuration" + (opts.config_path.empty() ? std::string() : " from " + opts.config_path));
  Reload r = reload_config(opts.config_path, opts.listen, *backend.config());
  if (r.config) {
    if (!r.restart_needed.empty()) log_warning(r.restart_needed + " take effect at the next restart");
    schedule.set_interval(r.config->collector.probe_interval);
    collector.set_config(*r.config);
    apply_memory_budget(r.config->collector, collector);
    backend.set_config(std::move(*r.config));
    backend.status().reload_ok.store(true);
    backend.status().reload_success_unix.store(unix_now());
    log_info("configuration reloaded");
  } else {
    backend.status().reload_ok.store(false);
    log_error("configuration reload failed, keeping the previous configuration: " + r.error);
  }
  // The web config file (TLS certificate and key, client CA, basic auth,
  // headers) applies at once: a new server starts behind the listening
  // sockets, which stay open. An invalid file, or one whose key cannot be
  // loaded, keeps the running settings.
  if (opts.web_config_path.empty()) return;
  try {
    const WebConfigFile next = load_web_config(opts.web_config_path);
    http.reload(&next);
    log_info("web config " + opts.web_config_path + " reloaded" + (next.tls ? " with TLS" : " without TLS") +
             (next.basic_auth_users.empty() ? "" : ", basic auth"));
  } catch (const std::exception& e) {
    backend.status().reload_ok.store(false);
    log_error(std::string("web config reload failed, the running TLS and auth settings are kept: ") + e.what());
  }
}

// What the wait between passes listens to: the blocked signals (as a
// signalfd) and the collector's set of event files.
struct WaitFds {
  int signals = -1;
  int wanted = -1;  // a reader asks for a snapshot (Collector::wanted_fd)
  int events = -1;
  int exits = -1;  // a cgroup's last task exited (Collector::exits_fd): spaced 1 ms, not 10
};

// Which signal arrived (0: none) after a poll that woke for it.
int take_signal(int fd) {
  signalfd_siginfo si{};
  return ::read(fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si) ? static_cast<int>(si.ssi_signo) : 0;
}

// Waits until the next pass is due (true) or a SIGTERM or SIGINT asks to
// stop (false); meanwhile pings the watchdog, reloads on SIGHUP, and runs an
// event wake-up when the kernel flags an event file (at most one every
// PassSchedule::kEventSpacing) or a cgroup's last task exits (kExitSpacing):
// an OOM kill reaches /metrics within milliseconds, whatever probe_interval
// is, and is read before its cgroup can be removed.
bool wait_for_next_pass(const WaitFds& fds, const Options& opts, Clock& clock, PassSchedule& schedule, Notifier& notifier,
                        Collector& collector, Backend& backend, HttpServer& http) {
  for (;;) {
    const TimePoint now = clock.now();
    const bool watch = fds.events >= 0 && schedule.events_watched(now);
    const bool watch_exits = fds.exits >= 0 && schedule.exits_watched(now);
    TimePoint until = schedule.wake_at();
    if (fds.events >= 0 && !watch) until = std::min(until, schedule.events_watched_at());
    if (fds.exits >= 0 && !watch_exits) until = std::min(until, schedule.exits_watched_at());
    const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(until - now);
    // A negative fd is skipped: none, or not watched until its spacing is up.
    pollfd pfd[4] = {{fds.signals, POLLIN, 0},
                     {fds.wanted, POLLIN, 0},
                     {watch_exits ? fds.exits : -1, POLLIN, 0},
                     {watch ? fds.events : -1, POLLIN, 0}};
    int ready = 0;
    if (wait.count() > 0) {
      const timespec ts{static_cast<time_t>(wait.count() / 1'000'000'000), static_cast<long>(wait.count() % 1'000'000'000)};
      ready = ::ppoll(pfd, 4, &ts, nullptr);
    }
    const int sig = ready > 0 && (pfd[0].revents & POLLIN) ? take_signal(fds.signals) : 0;
    if (sig == SIGTERM || sig == SIGINT) return false;
    if (sig == SIGHUP) {
      notifier.reloading();
      reload(opts, collector, backend, schedule, http);
      notifier.ready("configuration reloaded");
      continue;
    }
    // The kernel's flag before a reader's snapshot: a container is often
    // removed milliseconds after its OOM kill, and its counters are read
    // only while it exists.
    // An exit first of all: the cgroup may be removed a millisecond after.
    if (ready > 0 && (pfd[2].revents & POLLIN)) {
      schedule.exit_woken(clock.now());
      collector.run_event_pass();
      continue;
    }
    if (ready > 0 && (pfd[3].revents & POLLIN)) {
      schedule.event_woken(clock.now());
      collector.run_event_pass();
      continue;
    }
    if (ready > 0 && (pfd[1].revents & POLLIN)) {
      collector.serve_wanted();
      continue;
    }
    const auto after = clock.now();
    if (schedule.pass_due(after)) return true;
    if (schedule.ping_due(after)) {
      notifier.watchdog();
      schedule.pinged(after);
    }
  }
}

// After a pass: the schedule, the log, systemd's status and readiness.
class PassAftermath {
 public:
  PassAftermath(Collector& collector, Backend& backend, Notifier& notifier, PassSchedule& schedule, uint64_t fd_limit)
      : collector_(collector), backend_(backend), notifier_(notifier), schedule_(schedule), report_log_(fd_limit) {}

  void operator()(const PassReport& report, TimePoint now) {
    backend_.progress();
    schedule_.pass_done(now);
    report_log_(report, *collector_.latest());
    // Not a warning: a loaded host or a huge tree makes it happen, and it
    // only means values are probed less often than configured. Said once
    // (then every 100th time) and counted in memcg_exporter_pass_overruns_total.
    if (schedule_.fell_behind() > last_behind_ && (last_behind_ == 0 || schedule_.fell_behind() % 100 == 0))
      log_notice("a pass took longer than collector.probe_interval (" + std::to_string(schedule_.fell_behind()) +
                 " times so far): the next one starts at once rather than catching up");
    last_behind_ = schedule_.fell_behind();
    backend_.status().pass_overruns.store(last_behind_);
    const bool say = schedule_.status_due(now) || !announced_;
    const bool ping = schedule_.ping_after_pass(now, say);
    if (ping) schedule_.pinged(now);
    if (say) schedule_.status_sent(now);
    const std::string status = say || log_enabled(LogLevel::debug)
                                   ? status_line(report, collector_.config().collector.probe_interval)
                                   : std::string();
    if (!status.empty()) log_debug("pass " + std::to_string(report.pass) + ": " + status);
    if (announced_) {
      notifier_.after_pass(ping, say ? status : std::string());
      return;
    }
    notifier_.watchdog();
    schedule_.pinged(now);
    notifier_.ready(status);
    announced_ = true;
    const auto snap = collector_.latest();  // the first pass's: always built
    log_info("ready: first pass collected " + std::to_string(snap->cgroups.size()) + " cgroups");
    if (snap->kernel && snap->kernel->has("memory_peak_fd_reset") && snap->peak_reset_cgroups == 0 && !snap->cgroups.empty())
      log_info("memory.peak can be reset per open file on this kernel but not by this process (no write access: an "
               "unprivileged user or a read-only cgroupfs): the one-minute high comes from the probes alone");
  }

 private:
  Collector& collector_;
  Backend& backend_;
  Notifier& notifier_;
  PassSchedule& schedule_;
  ReportLog report_log_;
  uint64_t last_behind_ = 0;
  bool announced_ = false;
};

// Signals are taken synchronously by the daemon loop (through a signalfd).
// They are blocked before any thread starts, so the web server's threads inherit
// the mask and a SIGTERM can only ever be received there.
sys::UniqueFd take_signals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  return sys::UniqueFd(::signalfd(-1, &sigs, SFD_CLOEXEC));
}

}  // namespace

int run_daemon(const Options& opts, config::Config cfg, const std::string& root, const cgroupfs::FdLimit& fds,
               const WebConfigFile* web_file, Clock& clock) {
  const sys::UniqueFd signals = take_signals();
  if (!signals.valid()) {
    log_error(std::string("signalfd: ") + std::strerror(errno));
    return 1;
  }

  if (!opts.listen.empty()) cfg.web.listen = opts.listen;
  log_info(std::string("memcg-exporter ") + MEMCG_VERSION + " starting: root=" + root +
           " config=" + (opts.config_path.empty() ? "(built-in defaults)" : opts.config_path) +
           " fd_limit=" + std::to_string(fds.soft));

  Notifier notifier;
  // The web server as it runs: the configuration's, with no more client
  // connections than the fd limit can spare (the configured value is kept for
  // reloads to compare against).
  config::WebConfig web = cfg.web;
  web.max_open_connections = max_open_within(fds.soft, cfg.web.max_open_connections);
  if (web.max_open_connections < cfg.web.max_open_connections)
    log_notice("web.max_open_connections lowered from " + std::to_string(cfg.web.max_open_connections) + " to " +
               std::to_string(web.max_open_connections) + " to fit RLIMIT_NOFILE " + std::to_string(fds.soft));
  Collector collector(root, cfg, clock);
  if (!collector.publish_on_demand())
    log_notice(std::string("eventfd: ") + std::strerror(errno) + ": a snapshot is built after every pass instead of per scrape");
  collector.set_kernel(probe_kernel(root));
  // The cgroups get what the rest of the daemon cannot need; the web server's
  // share follows its configuration, which a reload does not change.
  collector.set_fd_budget(cgroupfs::cgroup_fd_budget(fds.soft, cgroupfs::kBaseFdReserve + web_fd_reserve(web)));
  apply_memory_budget(cfg.collector, collector);
  Backend backend(collector, cfg, clock);
  backend.status().reload_success_unix.store(unix_now());
  std::unique_ptr<HttpServer> http;
  try {
    http = std::make_unique<HttpServer>(web, backend, web_file);
  } catch (const std::exception& e) {
    log_error(e.what());
    return 1;
  }
  log_info("listening on " + describe_ports(*http) +
           (web_file ? std::string(web_file->tls ? " with TLS" : " without TLS") +
                           (web_file->basic_auth_users.empty() ? "" : ", basic auth") + " (" + web_file->path + ")"
                     : ""));

  const auto watchdog = notifier.watchdog_interval();
  PassSchedule schedule(collector.config().collector.probe_interval,
                        watchdog ? std::optional<Duration>(*watchdog) : std::nullopt, clock.now());
  PassAftermath after_pass(collector, backend, notifier, schedule, fds.soft);
  do {
    const PassReport report = collector.run_pass();
    after_pass(report, clock.now());
  } while (wait_for_next_pass({signals.get(), collector.wanted_fd(), collector.events_fd(), collector.exits_fd()}, opts, clock, schedule, notifier, collector, backend,
                              *http));
  notifier.stopping();
  log_info("shutting down");
  http.reset();
  return 0;
}

}  // namespace memcg::exporter
