// memcg-cost: what a running memcg-exporter costs, decomposed, next to the
// physical floor, in one run. Works against any exporter (a fixture tree on
// the build host, the real kernel in the VM, a production host).
//
// For --seconds it scrapes /metrics every --scrape-every seconds as
// Prometheus does (Accept-Encoding: gzip), and from the first to the last
// scrape takes the daemon's CPU from /proc/PID/task/*/schedstat (nanoseconds,
// every thread) and its own decomposition from
// memcg_exporter_cpu_seconds_total{phase}. Each interval holds exactly one
// scrape (a scrape's CPU is counted when it ends, after its body was built).
// With --bare ROOT it then runs the floor of any collector, alone (the
// exporter is stopped with SIGSTOP meanwhile and continued after): one pread
// of memory.current per cgroup per second on kept-open fds, over the cgroups
// under ROOT (the same tree), for the same time; and in the same seconds the
// floor of a re-read: one pread of memory.stat on a kept fd and the
// exporter's own parser, as many per second as the exporter made, against
// the exporter's read phase per memory.stat read; and every other file the
// exporter read (memcg_exporter_file_reads_total), one bare pread each, as
// many per second as it read them: the floor of its reads, file by file.
// The same memory.current loop also runs beside the daemon, in its window
// (a thread of this process; bare_beside.h says why), and the whole daemon
// is printed against both.
//
// With --wakeups N it finally sleeps N times for a second, as the daemon's
// collector does between passes, and prints what one sleep and its wake-up
// cost the sleeping thread: part of the daemon's "wait", and none of the
// bare loop's figure, which is taken between its wake-up and its sleep
// (printed also with it added: a loop that reads once a second sleeps too).
//
// Usage: memcg-cost --port P --pid PID [--seconds 60] [--scrape-every 15] [--bare ROOT] [--watchdog S] [--wakeups N]
// (--watchdog: the exporter's systemd WatchdogSec when its environment
// cannot be read; see measure_bare)
// Prints "COST ..." lines and a Markdown table: CPU per cgroup per second by
// part, and each as a multiple of the bare loop.
#include <dirent.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/parse/flat_keyed.h"
#include "base/parse/stat_keys.h"
#include "tests/bench/bare_beside.h"
#include "tests/bench/thread_cpu.h"
#include "tests/vm/http_get.h"

using memcg::bench::thread_cpu_seconds;

namespace {

// CPU of every thread of `pid`, in seconds (schedstat: nanoseconds on CPU),
// split by what the thread is: the collector loop (the main thread), the web
// server's (the gate and its workers: http-gate, http-worker), and any other.
struct ProcessCpu {
  double total = 0, collector = 0, http = 0, rest = 0;
  // The collector thread's context switches (its status file): involuntary
  // ones are preemptions, each a switch away and back in the middle of work.
  double collector_involuntary = 0, collector_voluntary = 0;
};

// "voluntary_ctxt_switches" and "nonvoluntary_ctxt_switches" of a task.
void context_switches(const std::string& task, double& voluntary, double& involuntary) {
  FILE* f = std::fopen((task + "/status").c_str(), "re");
  if (!f) return;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "voluntary_ctxt_switches:", 24) == 0) voluntary = std::atof(line + 24);
    else if (std::strncmp(line, "nonvoluntary_ctxt_switches:", 27) == 0) involuntary = std::atof(line + 27);
  }
  std::fclose(f);
}

ProcessCpu process_cpu(pid_t pid) {
  ProcessCpu cpu;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string task = dir + "/" + e->d_name;
      FILE* f = std::fopen((task + "/schedstat").c_str(), "re");
      if (!f) continue;  // exited meanwhile
      unsigned long long ns = 0;
      const bool ok = std::fscanf(f, "%llu", &ns) == 1;
      std::fclose(f);
      if (!ok) continue;
      char comm[32] = "";
      if (FILE* c = std::fopen((task + "/comm").c_str(), "re")) {
        if (!std::fgets(comm, sizeof comm, c)) comm[0] = 0;
        std::fclose(c);
      }
      const double s = static_cast<double>(ns) / 1e9;
      cpu.total += s;
      if (std::atoi(e->d_name) == pid) {
        cpu.collector += s;
        context_switches(task, cpu.collector_voluntary, cpu.collector_involuntary);
      } else if (std::strncmp(comm, "http-", 5) == 0) {
        cpu.http += s;
      } else {
        cpu.rest += s;
      }
    }
    closedir(d);
  }
  return cpu;
}

std::string gunzip(const std::string& in) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return {};
  std::string out;
  char buf[65536];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string();
}

struct Reading {
  ProcessCpu process;                   // the daemon's CPU, by thread
  std::map<std::string, double> phase;  // memcg_exporter_cpu_seconds_total
  double cgroups = 0;
  double reads = 0;  // memcg_exporter_stat_reads_total, every reason
  std::map<std::string, double> reasons;  // ... by reason
  std::map<std::string, double> file_reads;  // memcg_exporter_file_reads_total by file
  std::map<std::string, double> http_bytes;  // memcg_exporter_http_bytes_total by direction
  double buffered = 0;                       // memcg_exporter_http_response_buffer_bytes
  double wakeups = 0;                        // memcg_exporter_event_wakeups_total
  double passes = 0;                         // memcg_exporter_passes_total
  double unchanged = 0;                      // memcg_exporter_stat_reads_unchanged_total
  std::map<std::string, double> max_age_reads;  // memcg_stat_reads_total{reason="max_age"} by cgroup_id
  bool ok = false;
};

Reading scrape(int port, pid_t pid) {
  Reading r;
  // The daemon's CPU before the request: the phase counters in the answer
  // cannot include the scrape that produces it, so reading the process
  // after it would count the window's last scrape in the whole and its
  // first in the phases, and a costly first render showed as a negative
  // "other" (-52 ms in a 60 s window).
  r.process = process_cpu(pid);
  const std::string body = gunzip(http_get(port, "/metrics", "Accept-Encoding: gzip\r\n"));
  const std::string key = "memcg_exporter_cpu_seconds_total{phase=\"";
  const std::string kBytes = "memcg_exporter_http_bytes_total{direction=\"";
  const std::string kBuffered = "memcg_exporter_http_response_buffer_bytes ";
  const std::string kFiles = "memcg_exporter_file_reads_total{file=\"";
  const std::string kWakeups = "memcg_exporter_event_wakeups_total ";
  const std::string kPasses = "memcg_exporter_passes_total ";
  const std::string kUnchanged = "memcg_exporter_stat_reads_unchanged_total ";
  const std::string kPerCgroup = "memcg_stat_reads_total{cgroup_id=\"";
  for (size_t pos = 0; (pos = body.find('\n', pos)) != std::string::npos;) {
    ++pos;
    if (body.compare(pos, key.size(), key) == 0) {
      const size_t q = body.find('"', pos + key.size());
      r.phase[body.substr(pos + key.size(), q - pos - key.size())] = std::atof(body.c_str() + body.find(' ', q) + 1);
    } else if (body.compare(pos, 23, "memcg_exporter_cgroups ") == 0) {
      r.cgroups = std::atof(body.c_str() + pos + 23);
    } else if (body.compare(pos, kBytes.size(), kBytes) == 0) {
      const size_t at = pos + kBytes.size();
      r.http_bytes[body.substr(at, body.find('"', at) - at)] = std::atof(body.c_str() + body.find(' ', pos) + 1);
    } else if (body.compare(pos, kWakeups.size(), kWakeups) == 0) {
      r.wakeups = std::atof(body.c_str() + pos + kWakeups.size());
    } else if (body.compare(pos, kPasses.size(), kPasses) == 0) {
      r.passes = std::atof(body.c_str() + pos + kPasses.size());
    } else if (body.compare(pos, kUnchanged.size(), kUnchanged) == 0) {
      r.unchanged = std::atof(body.c_str() + pos + kUnchanged.size());
    } else if (body.compare(pos, kBuffered.size(), kBuffered) == 0) {
      r.buffered = std::atof(body.c_str() + pos + kBuffered.size());
    } else if (body.compare(pos, kFiles.size(), kFiles) == 0) {
      const size_t at = pos + kFiles.size();
      r.file_reads[body.substr(at, body.find('"', at) - at)] = std::atof(body.c_str() + body.find(' ', pos) + 1);
    } else if (body.compare(pos, 40, "memcg_exporter_stat_reads_total{reason=\"") == 0) {
      const double v = std::atof(body.c_str() + body.find(' ', pos) + 1);
      r.reads += v;
      r.reasons[body.substr(pos + 40, body.find('"', pos + 40) - pos - 40)] = v;
    } else if (body.compare(pos, kPerCgroup.size(), kPerCgroup) == 0) {
      const size_t at = pos + kPerCgroup.size(), end = body.find('\n', pos);
      if (body.substr(pos, end - pos).find("reason=\"max_age\"} ") != std::string::npos)
        r.max_age_reads[body.substr(at, body.find('"', at) - at)] = std::atof(body.c_str() + body.rfind(' ', end) + 1);
    }
  }
  r.ok = !r.phase.empty();
  return r;
}

// Every `file` under root, kept open.
void open_all(const std::string& dir, const char* file, std::vector<int>& fds) {
  const int fd = open((dir + "/" + file).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) fds.push_back(fd);
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> subs;
  while (dirent* e = readdir(d))
    if (e->d_type == DT_DIR && e->d_name[0] != '.') subs.emplace_back(e->d_name);
  closedir(d);
  for (const auto& s : subs) open_all(dir + "/" + s, file, fds);
}

}  // namespace

struct Options {
  int port = 9756;
  pid_t pid = 0;
  double seconds = 60, every = 15;
  std::string bare;
  double watchdog = 0;  // seconds; 0: from the exporter's WATCHDOG_USEC
  int wakeups = 0;
};

// false (after saying why) on a usage error.
bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--port") o.port = std::atoi(v.c_str());
    else if (k == "--pid") o.pid = static_cast<pid_t>(std::atoi(v.c_str()));
    else if (k == "--seconds") o.seconds = std::atof(v.c_str());
    else if (k == "--scrape-every") o.every = std::atof(v.c_str());
    else if (k == "--bare") o.bare = v;
    else if (k == "--watchdog") o.watchdog = std::atof(v.c_str());
    else if (k == "--wakeups") o.wakeups = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "memcg-cost: unknown option %s\n", k.c_str());
      return false;
    }
  }
  if (o.pid <= 0 || o.every <= 0 || o.seconds < o.every) {
    std::fprintf(stderr, "usage: memcg-cost --port P --pid PID [--seconds S >= scrape-every] [--scrape-every S] [--bare ROOT] [--watchdog S] [--wakeups N]\n");
    return false;
  }
  return true;
}

using Clock = std::chrono::steady_clock;

// The bare loops, run after the window with the daemon stopped: the
// memory.current loop, and the re-read floors.
struct Bare {
  size_t n = 0;                 // cgroups in the loop
  double us = 0;                // bare memory.current loop, us per cgroup per second
  double stat_us = 0;           // a bare pread + parse of memory.stat, paced like the daemon
  double trio_us = 0;           // ... with memory.pressure and memory.peak
  int resumed = 0;              // times the exporter was continued for its watchdog
  double watchdog = 0;          // its WatchdogSec, 0 for none
  // Each other file the daemon read, read bare (one pread, no parse) as
  // many times per second as the daemon read it: us per read.
  std::map<std::string, double> file_us;
};

// The other files the daemon read in its window, each paced like the
// daemon: as many preads per second as it made, round-robin over the
// cgroups that have the file (memory.current and memory.stat have loops of
// their own).
class PacedFiles {
 public:
  PacedFiles(const std::string& root, const std::map<std::string, double>& per_second) {
    for (const auto& [name, rate] : per_second) {
      if (rate <= 0 || name == "memory.current" || name == "memory.stat") continue;
      File f{name, {}, rate};
      open_all(root, name.c_str(), f.fds);
      if (!f.fds.empty()) files_.push_back(std::move(f));
    }
  }
  ~PacedFiles() {
    for (auto& f : files_)
      for (int fd : f.fds) close(fd);
  }
  PacedFiles(const PacedFiles&) = delete;
  PacedFiles& operator=(const PacedFiles&) = delete;

  // One second's share of every file's reads.
  void tick(std::string& buf) {
    for (auto& f : files_) {
      const double c0 = thread_cpu_seconds();
      for (f.owed += f.rate; f.owed >= 1; f.owed -= 1, ++f.reads)
        (void)!pread(f.fds[f.next++ % f.fds.size()], buf.data(), buf.size(), 0);
      f.cpu += thread_cpu_seconds() - c0;
    }
  }
  void results(std::map<std::string, double>& us) const {
    for (const auto& f : files_)
      if (f.reads) us[f.name] = f.cpu / static_cast<double>(f.reads) * 1e6;
  }

 private:
  struct File {
    std::string name;
    std::vector<int> fds;
    double rate = 0, owed = 0, cpu = 0;
    uint64_t reads = 0;
    size_t next = 0;
  };
  std::vector<File> files_;
};

// The exporter's systemd watchdog interval in seconds (WATCHDOG_USEC in its
// environment, set by systemd for WatchdogSec=), 0 when it has none.
double watchdog_seconds(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/environ").c_str(), "re");
  if (!f) return 0;
  std::string env(1 << 16, '\0');
  env.resize(std::fread(env.data(), 1, env.size(), f));
  std::fclose(f);
  constexpr std::string_view kKey = "WATCHDOG_USEC=";
  for (std::string_view rest = env; !rest.empty();) {
    const size_t end = rest.find('\0');
    const std::string_view var = rest.substr(0, end);
    if (var.starts_with(kKey)) return std::atof(std::string(var.substr(kKey.size())).c_str()) / 1e6;
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  }
  return 0;
}

// Keeps the exporter stopped for the bare window. Under a systemd watchdog
// it is continued between two ticks every third of the interval, so that it
// pings in time rather than being killed and restarted (WatchdogSec=30s in
// the unit); it then runs while the loop sleeps, not while it is measured.
// A third, not a half: the exporter pings half an interval after its last
// ping, so a continue that lands just before that finds nothing due, and
// with continues a half interval apart the next can come a whole interval
// after that ping, at the watchdog's deadline (the likely way a 6.1 guest's
// exporter was killed once during a bare window; not reproduced).
class ExporterStop {
 public:
  ExporterStop(pid_t pid, double watchdog, int ticks)
      : pid_(pid), every_(watchdog > 0 ? std::max(1, static_cast<int>(watchdog / 3)) : 0), ticks_(ticks) {
    kill(pid_, SIGSTOP);
  }
  ~ExporterStop() { kill(pid_, SIGCONT); }
  ExporterStop(const ExporterStop&) = delete;
  ExporterStop& operator=(const ExporterStop&) = delete;
  void before_tick(int tick) {
    if (resumed_ > 0 && tick % every_ == 0) kill(pid_, SIGSTOP);
  }
  void after_tick(int tick) {
    if (every_ == 0 || (tick + 1) % every_ != 0 || tick + 1 >= ticks_) return;
    kill(pid_, SIGCONT);
    ++resumed_;
  }
  int resumed() const noexcept { return resumed_; }

 private:
  pid_t pid_;
  int every_, ticks_, resumed_ = 0;
};

// The files the bare loops read, one descriptor per cgroup each.
struct BareFiles {
  std::vector<int> current, stat, pressure, peak;
  explicit BareFiles(const std::string& root) {
    open_all(root, "memory.current", current);
    open_all(root, "memory.stat", stat);
    open_all(root, "memory.pressure", pressure);
    open_all(root, "memory.peak", peak);
  }
  ~BareFiles() {
    for (const auto* v : {&current, &stat, &pressure, &peak})
      for (int fd : *v) close(fd);
  }
  BareFiles(const BareFiles&) = delete;
  BareFiles& operator=(const BareFiles&) = delete;
};

// A bare re-read: one pread of memory.stat on a kept fd and the exporter's
// own parser (its buffer serves the other bare preads too).
struct StatReader {
  std::string text = std::string(64 * 1024, '\0');
  memcg::parse::LayoutCache layout;
  memcg::parse::StatValues values;
  void operator()(int fd) {
    const ssize_t got = pread(fd, text.data(), text.size(), 0);
    if (got > 0)
      (void)memcg::parse::parse_flat_keyed({text.data(), static_cast<size_t>(got)}, memcg::parse::stat_key_table(), layout,
                                           values.out());
  }
};

Bare measure_bare(const BareFiles& files, const std::string& root, pid_t pid, double window, double reads,
                  const std::map<std::string, double>& file_rates, double watchdog) {
  Bare b;
  PacedFiles others(root, file_rates);
  const std::vector<int>&fds = files.current, &stats = files.stat, &pressures = files.pressure, &peaks = files.peak;
  b.n = fds.size();
  char buf[64];
  StatReader read_stat;
  std::string& text = read_stat.text;
  // The re-read floor, paced like the daemon: as many memory.stat reads
  // per second as it made in its window, round-robin over every cgroup,
  // with the same workload running, so that floor and daemon meet the
  // same pending flush work (a floor read back to back measured the same
  // within noise in the VM). Then the same with what a re-read also
  // reads: memory.pressure and memory.peak (one pread each, no parse), so
  // that the kernel's part and the daemon's own part can be told apart.
  const double stat_rate = stats.empty() ? 0 : reads / window;
  double owed = 0, cpu = 0, stat_cpu = 0, trio_cpu = 0;
  uint64_t stat_reads = 0;
  size_t next = 0, next_trio = 0;
  b.watchdog = watchdog > 0 ? watchdog : watchdog_seconds(pid);
  const int ticks = static_cast<int>(window);
  {
    ExporterStop stop(pid, b.watchdog, ticks);
    const auto b0 = Clock::now();
    for (int tick = 0; tick < ticks; ++tick) {
      std::this_thread::sleep_until(b0 + std::chrono::seconds(tick));
      stop.before_tick(tick);
      const double c0 = thread_cpu_seconds();
      for (int fd : fds) (void)!pread(fd, buf, sizeof buf, 0);
      const double c1 = thread_cpu_seconds();
      uint64_t now_reads = 0;
      for (owed += stat_rate; owed >= 1; owed -= 1, ++now_reads) read_stat(stats[next++ % stats.size()]);
      const double c2 = thread_cpu_seconds();
      for (uint64_t i = 0; i < now_reads; ++i, ++next_trio) {
        read_stat(stats[next_trio % stats.size()]);
        if (!pressures.empty()) (void)!pread(pressures[next_trio % pressures.size()], text.data(), text.size(), 0);
        if (!peaks.empty()) (void)!pread(peaks[next_trio % peaks.size()], buf, sizeof buf, 0);
      }
      stat_reads += now_reads;
      cpu += c1 - c0;
      stat_cpu += c2 - c1;
      trio_cpu += thread_cpu_seconds() - c2;
      others.tick(text);
      stop.after_tick(tick);
    }
    b.resumed = stop.resumed();
  }
  b.stat_us = stat_reads ? stat_cpu / static_cast<double>(stat_reads) * 1e6 : 0;
  b.trio_us = stat_reads ? trio_cpu / static_cast<double>(stat_reads) * 1e6 : 0;
  b.us = b.n ? cpu / static_cast<double>(b.n) / std::max(1.0, std::floor(window)) * 1e6 : 0;
  others.results(b.file_us);
  return b;
}

// What the printing needs of a window.
struct Window {
  Reading first, last;
  double seconds = 0, cgroups = 1;
  int scrapes = 0;
  double every = 0;
  double per(double cpu) const { return cpu / cgroups / seconds * 1e6; }  // us per cgroup per second
  double phase(const char* p) const { return at(last, p) - at(first, p); }
  static double at(const Reading& r, const char* p) {
    const auto it = r.phase.find(p);
    return it == r.phase.end() ? 0.0 : it->second;
  }
};

// The decomposition table, where "other" ran, and the front's own cost.
// Returns the whole daemon's CPU in the window.
double print_parts(Window& w, const Bare& bare) {
  std::printf("COST cgroups=%.0f window=%.1fs scrapes=%d (gzip, every %.0f s)%s\n", w.cgroups, w.seconds, w.scrapes, w.every,
              bare.n == 0 ? "" : (" bare loop over " + std::to_string(bare.n) + " cgroups").c_str());
  std::printf("COST\nCOST | part | CPU in the window | us per cgroup per second |%s\nCOST |---|---|---|%s\n",
              bare.us > 0 ? " x bare loop |" : "", bare.us > 0 ? "---|" : "");
  auto row = [&](const char* name, double cpu) {
    std::printf("COST | %s | %.3f ms | %.2f |", name, cpu * 1e3, w.per(cpu));
    if (bare.us > 0) std::printf(" %.2fx |", w.per(cpu) / bare.us);
    std::printf("\n");
  };
  double phases = 0;
  // wait: the collector between passes (an exporter older than that phase
  // reports none, and its "other" holds it).
  for (const char* p : {"probe", "read", "rescan", "wait", "scrape", "http"}) {
    phases += w.phase(p);
    row(p, w.phase(p));
  }
  const double whole = w.last.process.total - w.first.process.total;
  row("other (web server outside /metrics, other threads)", whole - phases);
  row("whole daemon", whole);
  if (bare.us > 0) std::printf("COST | bare memory.current loop | | %.2f | 1.00x |\n", bare.us);
  if (bare.resumed > 0)
    std::printf("COST bare window: the exporter was continued %d times between ticks for its systemd watchdog (%.0f s)\n",
                bare.resumed, bare.watchdog);
  // Where "other" ran: the collector thread outside its phases (with the
  // wait phase, a sliver: the few readings around them), the web server's
  // threads outside the /metrics handler (accepting, reading requests, other
  // routes), the rest (the connection gate's thread outside its own http phase).
  const double scrape = w.phase("scrape"), gate = w.phase("http");
  const double collector_rest = (w.last.process.collector - w.first.process.collector) - (phases - scrape - gate);
  const double http_rest = (w.last.process.http - w.first.process.http) - scrape;
  std::printf("COST\nCOST other by thread: collector outside its phases %.3f ms (%.1f event wake-ups a second between "
              "passes), web server outside /metrics %.3f ms, other threads %.3f ms\n",
              collector_rest * 1e3, (w.last.wakeups - w.first.wakeups) / w.seconds, http_rest * 1e3,
              (w.last.process.rest - w.first.process.rest - gate) * 1e3);
  // The front's own cost: the gate's CPU (the http row) per byte it relayed.
  const double in = w.last.http_bytes["received"] - w.first.http_bytes["received"];
  const double out = w.last.http_bytes["sent"] - w.first.http_bytes["sent"];
  std::printf("COST front: %.0f bytes received, %.0f sent, %.2f us of gate CPU per KiB sent, %.0f response bytes buffered at the last sample\n",
              in, out, out > 0 ? gate * 1e6 / (out / 1024) : 0.0, w.last.buffered);
  return whole;
}

// The whole daemon against the bare loop that ran beside it in its window
// (bare_beside.h says why), next to the ratio against the window after it.
void print_beside(const Window& w, const Bare& bare, const memcg::bench::BareBeside& beside, double whole) {
  if (beside.us() <= 0) return;
  std::printf("COST | bare memory.current loop beside the daemon, in its window (%d ticks over %zu cgroups) | | %.2f |",
              beside.ticks(), beside.cgroups(), beside.us());
  if (bare.us > 0) std::printf(" %.2fx |", beside.us() / bare.us);
  std::printf("\nCOST the whole daemon is %.2fx the bare loop beside it", w.per(whole) / beside.us());
  if (bare.us > 0) std::printf(" (%.2fx the bare loop of the window after it)", w.per(whole) / bare.us);
  std::printf("\n");
  // Preemptions in the middle of work: each may cost the preempted thread a
  // switch back and caches another task emptied.
  const auto& a = w.first.process;
  const auto& b = w.last.process;
  std::printf("COST preemptions: the collector thread %.1f a second (%.1f voluntary switches a second); the bare loop "
              "beside it %.2f per tick\n",
              (b.collector_involuntary - a.collector_involuntary) / w.seconds,
              (b.collector_voluntary - a.collector_voluntary) / w.seconds, beside.preemptions_per_tick());
  // A window of ~60.1 s holds 60 or 61 passes, as its two scrapes fall
  // against the pass schedule: the pass-driven parts (probe, read, wait) and
  // the max_age reads differ by a pass's share between windows for that
  // alone, which the figures per pass do not.
  const double passes = w.last.passes - w.first.passes;
  if (passes > 0) {
    auto per_pass = [&](const char* p) { return w.phase(p) / w.cgroups / passes * 1e6; };
    std::printf("COST passes in the window: %.0f (%.3f a second); per pass, us per cgroup: probe %.2f, read %.2f, "
                "wait %.2f (the bare loop beside it: %.2f a tick)\n",
                passes, passes / w.seconds, per_pass("probe"), per_pass("read"), per_pass("wait"), beside.us());
  }
}

// How many cgroups had how many max_age reads in the window: a quiet
// cgroup's is due every max_age - 1.5 probe intervals, rounded to passes
// (9 at the defaults). A window of whole cycles (180 s: 20) holds the same
// number for each; a 60 s window 6 or 7 by where it began against each
// cgroup's phase, and since the phases sit in about half of each cycle's
// passes, it may hold 7 for nearly all (3-5 % above the rate).
void print_max_age_spread(const Window& w) {
  std::map<int, int> by_count;
  for (const auto& [id, v] : w.last.max_age_reads) {
    const auto it = w.first.max_age_reads.find(id);
    if (it != w.first.max_age_reads.end()) ++by_count[static_cast<int>(v - it->second)];
  }
  if (by_count.empty()) return;
  std::printf("COST max_age reads per cgroup in the window (cgroups x reads):");
  for (const auto& [count, cgroups] : by_count) std::printf(" %dx%d", cgroups, count);
  std::printf("\n");
}

// The re-reads against their paced floor, the reasons, and the floor of the
// configuration.
void print_reads(Window& w, const Bare& bare, double whole) {
  const double reads = w.last.reads - w.first.reads;
  if (reads <= 0) return;
  const double per_read = w.phase("read") / reads * 1e6;
  std::printf("COST\nCOST re-read: %.0f memory.stat reads, %.1f us each in the read phase (peak, pressure, limits when due)", reads, per_read);
  if (bare.stat_us > 0)
    std::printf("; bare pread + parse of memory.stat paced like the daemon %.1f us: %.2fx", bare.stat_us, per_read / bare.stat_us);
  if (bare.trio_us > 0)
    std::printf("; with memory.pressure and memory.peak %.1f us: %.2fx", bare.trio_us, per_read / bare.trio_us);
  std::printf("\n");
  std::printf("COST reads by reason:");
  for (const auto& [reason, v] : w.last.reasons)
    if (v > w.first.reasons[reason]) std::printf(" %s %.1f/s", reason.c_str(), (v - w.first.reasons[reason]) / w.seconds);
  // Reads that returned the cgroup's previous bytes: kept, not parsed.
  std::printf("; unchanged (not parsed again) %.0f of %.0f\n", w.last.unchanged - w.first.unchanged, reads);
  print_max_age_spread(w);
  // The floor of the job as configured: every cgroup's memory.current once
  // a second and, for each memory.stat read the policy made, a bare pread
  // + parse of memory.stat. What the daemon costs above it is its own work
  // (probing the other files, deciding, timing, rendering, compressing);
  // what the floor costs above the bare loop is the freshness asked for.
  if (bare.us > 0 && bare.stat_us > 0) {
    const double floor_us = bare.us + reads / w.seconds * bare.stat_us / w.cgroups;
    std::printf("COST floor of this configuration (bare loop + its %.1f memory.stat reads per second, bare): %.2f us per "
                "cgroup per second = %.2fx the bare loop; the whole daemon is %.2fx that floor\n",
                reads / w.seconds, floor_us, floor_us / bare.us, w.per(whole) / floor_us);
  }
}

// Every file the daemon read, per second, and what the same reads cost
// bare: the floor of the daemon's reads as it made them, file by file, and
// its own work on top of that floor.
void print_files(Window& w, const Bare& bare, double whole) {
  if (w.last.file_reads.empty() || bare.us <= 0) return;
  std::printf("COST\nCOST | file | reads per second | per cgroup per second | bare us per read | us per cgroup per second | x bare loop |\n"
              "COST |---|---|---|---|---|---|\n");
  double sum = 0;
  for (const auto& [name, total] : w.last.file_reads) {
    const double rate = (total - w.first.file_reads[name]) / w.seconds;
    if (rate <= 0) continue;
    const auto it = bare.file_us.find(name);
    const double us = name == "memory.current" ? bare.us : name == "memory.stat" ? bare.stat_us
                      : it != bare.file_us.end() ? it->second : 0;
    const double per = rate * us / w.cgroups;
    sum += per;
    std::printf("COST | %s | %.1f | %.3f | %.1f | %.2f | %.2fx |\n", name.c_str(), rate, rate / w.cgroups, us, per,
                per / bare.us);
  }
  std::printf("COST | every file as the daemon read it, bare | | | | %.2f | %.2fx |\n", sum, sum / bare.us);
  std::printf("COST the daemon's own work on top of its reads: %.2f us per cgroup per second = %.2fx the bare loop\n",
              w.per(whole) - sum, (w.per(whole) - sum) / bare.us);
}

// One sleep of a second and the wake-up after it, as the daemon's wait
// sleeps (ppoll on a signalfd, an eventfd and an epoll set: each polled file
// is a wait-queue entry added and removed), in microseconds of the sleeping
// thread's CPU, over `n` sleeps.
double wakeup_us(int n) {
  sigset_t none;
  sigemptyset(&none);
  const int sig = signalfd(-1, &none, SFD_CLOEXEC), ev = eventfd(0, EFD_CLOEXEC), ep = epoll_create1(EPOLL_CLOEXEC);
  pollfd fds[3] = {{sig, POLLIN, 0}, {ev, POLLIN, 0}, {ep, POLLIN, 0}};
  double cpu = 0;
  for (int i = 0; i < n; ++i) {
    const double c0 = thread_cpu_seconds();
    const timespec second{1, 0};
    (void)ppoll(fds, 3, &second, nullptr);
    cpu += thread_cpu_seconds() - c0;
  }
  for (int fd : {sig, ev, ep})
    if (fd >= 0) close(fd);
  return n > 0 ? cpu / n * 1e6 : 0;
}

// The bare loop's figure is its reads alone, taken between its wake-up and
// its sleep; a loop that reads once a second also sleeps and wakes once a
// second, as the daemon does (inside its "wait"). Both are printed: the
// reads alone remain the yardstick of the tables above.
void print_wakeups(const Window& w, const Bare& bare, int n, double whole) {
  const double us = wakeup_us(n);
  const double per = us / w.cgroups;  // one sleep a pass, one pass a second
  std::printf("COST wake-up: a thread's 1 s sleep and its wake-up cost %.1f us of its CPU (%d sleeps) = %.2f us per cgroup "
              "per second at one pass a second",
              us, n, per);
  if (bare.us > 0) std::printf(" = %.2fx the bare loop, inside \"wait\"", per / bare.us);
  std::printf("\n");
  if (bare.us > 0)
    std::printf("COST the bare loop with its own sleep and wake-up once a second: %.2f us per cgroup per second; the whole "
                "daemon is %.2fx that\n",
                bare.us + per, w.per(whole) / (bare.us + per));
}

// Three: the first render, then a family's text the same twice.
constexpr int kScrapesOffTheRecord = 3;

int main(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 64;
  // The bare loops keep a descriptor per cgroup for each file the daemon read.
  if (rlimit lim{}; getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  Window w;
  w.every = o.every;
  w.scrapes = static_cast<int>(o.seconds / o.every);
  // Scrapes off the record, as if Prometheus had been scraping all along:
  // an exporter's first render also builds the identity text and grows its
  // buffers, which no later scrape does, and a value family is compressed
  // apart (once) when its text repeated at two scrapes in a row
  // (exporter/http/stable_families.h). Each past the next pass, so that the
  // window's first scrape renders a new snapshot like the rest.
  for (int i = 0; i < kScrapesOffTheRecord; ++i) {
    (void)scrape(o.port, o.pid);
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  w.first = scrape(o.port, o.pid);
  if (!w.first.ok) {
    std::fprintf(stderr, "memcg-cost: no memcg_exporter_cpu_seconds_total at 127.0.0.1:%d\n", o.port);
    return 1;
  }
  // The bare loops' files, opened once: the loop beside the daemon and the
  // one in the window after it read memory.current through the same fds.
  std::optional<BareFiles> files;
  if (!o.bare.empty()) files.emplace(o.bare);
  const auto t0 = Clock::now();
  memcg::bench::BareBeside beside(files ? std::span<const int>(files->current) : std::span<const int>());
  if (files && !files->current.empty()) beside.start(t0);
  w.last = w.first;
  for (int i = 1; i <= w.scrapes; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(i * o.every));
    w.last = scrape(o.port, o.pid);
  }
  w.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  beside.stop();
  w.cgroups = w.last.cgroups > 0 ? w.last.cgroups : 1;
  std::map<std::string, double> file_rates;
  for (const auto& [name, total] : w.last.file_reads) file_rates[name] = (total - w.first.file_reads[name]) / w.seconds;
  const Bare bare =
      files ? measure_bare(*files, o.bare, o.pid, w.seconds, w.last.reads - w.first.reads, file_rates, o.watchdog) : Bare{};
  const double whole = print_parts(w, bare);
  print_beside(w, bare, beside, whole);
  print_reads(w, bare, whole);
  print_files(w, bare, whole);
  if (o.wakeups > 0) print_wakeups(w, bare, o.wakeups, whole);
  return 0;
}
