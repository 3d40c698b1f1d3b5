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
// the exporter's read phase per memory.stat read.
//
// Usage: memcg-cost --port P --pid PID [--seconds 60] [--scrape-every 15] [--bare ROOT]
// Prints "COST ..." lines and a Markdown table: CPU per cgroup per second by
// part, and each as a multiple of the bare loop.
#include <dirent.h>
#include <signal.h>
#include <fcntl.h>
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
#include <string>
#include <thread>
#include <vector>

#include "plugin/parse/flat_keyed.h"
#include "plugin/parse/stat_keys.h"
#include "tests/vm/http_get.h"

namespace {

double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// CPU of every thread of `pid`, in seconds (schedstat: nanoseconds on CPU),
// split by what the thread is: the collector loop (the main thread), the web
// server's (CivetWeb names its threads civetweb-*), and any other.
struct ProcessCpu {
  double total = 0, collector = 0, http = 0, rest = 0;
};

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
      if (std::atoi(e->d_name) == pid) cpu.collector += s;
      else if (std::strncmp(comm, "civetweb", 8) == 0) cpu.http += s;
      else cpu.rest += s;
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
  std::map<std::string, double> http_bytes;  // memcg_exporter_http_bytes_total by direction
  double buffered = 0;                       // memcg_exporter_http_response_buffer_bytes
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
    } else if (body.compare(pos, kBuffered.size(), kBuffered) == 0) {
      r.buffered = std::atof(body.c_str() + pos + kBuffered.size());
    } else if (body.compare(pos, 40, "memcg_exporter_stat_reads_total{reason=\"") == 0) {
      const double v = std::atof(body.c_str() + body.find(' ', pos) + 1);
      r.reads += v;
      r.reasons[body.substr(pos + 40, body.find('"', pos + 40) - pos - 40)] = v;
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

int main(int argc, char** argv) {
  int port = 9756;
  pid_t pid = 0;
  double seconds = 60, every = 15;
  std::string bare;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--port") port = std::atoi(v.c_str());
    else if (k == "--pid") pid = static_cast<pid_t>(std::atoi(v.c_str()));
    else if (k == "--seconds") seconds = std::atof(v.c_str());
    else if (k == "--scrape-every") every = std::atof(v.c_str());
    else if (k == "--bare") bare = v;
    else {
      std::fprintf(stderr, "memcg-cost: unknown option %s\n", k.c_str());
      return 64;
    }
  }
  if (pid <= 0 || every <= 0 || seconds < every) {
    std::fprintf(stderr, "usage: memcg-cost --port P --pid PID [--seconds S >= scrape-every] [--scrape-every S] [--bare ROOT]\n");
    return 64;
  }
  using Clock = std::chrono::steady_clock;
  const int intervals = static_cast<int>(seconds / every);
  // One scrape off the record, as if Prometheus had been scraping all
  // along: an exporter's first render also builds the identity text and
  // grows its buffers, which no later scrape does. Then past the next pass,
  // so that the window's first scrape renders a new snapshot like the rest.
  (void)scrape(port, pid);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  Reading first = scrape(port, pid);
  if (!first.ok) {
    std::fprintf(stderr, "memcg-cost: no memcg_exporter_cpu_seconds_total at 127.0.0.1:%d\n", port);
    return 1;
  }
  const auto t0 = Clock::now();
  Reading last = first;
  for (int i = 1; i <= intervals; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(i * every));
    last = scrape(port, pid);
  }
  const double window = std::chrono::duration<double>(Clock::now() - t0).count();
  const double n = last.cgroups > 0 ? last.cgroups : 1;
  auto per = [&](double cpu) { return cpu / n / window * 1e6; };  // us per cgroup per second

  double bare_us = 0, paced_stat_us = 0, paced_trio_us = 0;
  size_t bare_n = 0;
  const double reads = last.reads - first.reads;
  if (!bare.empty()) {
    std::vector<int> fds, stats, pressures, peaks;
    open_all(bare, "memory.current", fds);
    open_all(bare, "memory.stat", stats);
    open_all(bare, "memory.pressure", pressures);
    open_all(bare, "memory.peak", peaks);
    bare_n = fds.size();
    char buf[64];
    std::string text(64 * 1024, '\0');
    memcg::parse::LayoutCache layout;
    memcg::parse::StatValues values;
    auto read_stat = [&](int fd) {
      const ssize_t got = pread(fd, text.data(), text.size(), 0);
      if (got > 0)
        (void)memcg::parse::parse_flat_keyed({text.data(), static_cast<size_t>(got)}, memcg::parse::stat_key_table(), layout,
                                             values.out());
    };
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
    kill(pid, SIGSTOP);
    const auto b0 = Clock::now();
    for (int tick = 0; tick < static_cast<int>(window); ++tick) {
      std::this_thread::sleep_until(b0 + std::chrono::seconds(tick));
      const double c0 = thread_cpu();
      for (int fd : fds) (void)!pread(fd, buf, sizeof buf, 0);
      const double c1 = thread_cpu();
      uint64_t now_reads = 0;
      for (owed += stat_rate; owed >= 1; owed -= 1, ++now_reads) read_stat(stats[next++ % stats.size()]);
      const double c2 = thread_cpu();
      for (uint64_t i = 0; i < now_reads; ++i, ++next_trio) {
        read_stat(stats[next_trio % stats.size()]);
        if (!pressures.empty()) (void)!pread(pressures[next_trio % pressures.size()], text.data(), text.size(), 0);
        if (!peaks.empty()) (void)!pread(peaks[next_trio % peaks.size()], buf, sizeof buf, 0);
      }
      stat_reads += now_reads;
      cpu += c1 - c0;
      stat_cpu += c2 - c1;
      trio_cpu += thread_cpu() - c2;
    }
    paced_stat_us = stat_reads ? stat_cpu / static_cast<double>(stat_reads) * 1e6 : 0;
    paced_trio_us = stat_reads ? trio_cpu / static_cast<double>(stat_reads) * 1e6 : 0;
    for (int fd : stats) close(fd);
    for (int fd : pressures) close(fd);
    for (int fd : peaks) close(fd);
    kill(pid, SIGCONT);
    for (int fd : fds) close(fd);
    bare_us = bare_n ? cpu / static_cast<double>(bare_n) / std::max(1.0, std::floor(window)) * 1e6 : 0;
  }

  double phases = 0;
  std::printf("COST cgroups=%.0f window=%.1fs scrapes=%d (gzip, every %.0f s)%s\n", n, window, intervals, every,
              bare.empty() ? "" : (" bare loop over " + std::to_string(bare_n) + " cgroups").c_str());
  std::printf("COST\nCOST | part | CPU in the window | us per cgroup per second |%s\nCOST |---|---|---|%s\n",
              bare_us > 0 ? " x bare loop |" : "", bare_us > 0 ? "---|" : "");
  auto row = [&](const char* name, double cpu) {
    std::printf("COST | %s | %.3f ms | %.2f |", name, cpu * 1e3, per(cpu));
    if (bare_us > 0) std::printf(" %.2fx |", per(cpu) / bare_us);
    std::printf("\n");
  };
  for (const char* p : {"probe", "read", "rescan", "scrape", "http"}) {
    const double cpu = last.phase[p] - first.phase[p];
    phases += cpu;
    row(p, cpu);
  }
  const double whole = last.process.total - first.process.total;
  row("other (HTTP connections, logging)", whole - phases);
  row("whole daemon", whole);
  if (bare_us > 0) std::printf("COST | bare memory.current loop | | %.2f | 1.00x |\n", bare_us);
  // Where "other" ran: the collector thread outside its phases (logging a
  // pass, telling systemd, waking up), the web server's threads outside the
  // /metrics handler (accepting, reading requests, other routes), the rest.
  const double scrape_phase = last.phase["scrape"] - first.phase["scrape"];
  const double gate_phase = last.phase["http"] - first.phase["http"];  // the connection gate's own thread
  const double collector_rest = (last.process.collector - first.process.collector) - (phases - scrape_phase - gate_phase);
  const double http_rest = (last.process.http - first.process.http) - scrape_phase;
  std::printf("COST\nCOST other by thread: collector outside its phases %.3f ms, web server outside /metrics %.3f ms, "
              "other threads %.3f ms\n",
              collector_rest * 1e3, http_rest * 1e3, (last.process.rest - first.process.rest - gate_phase) * 1e3);
  // The front's own cost: the gate's CPU (the http row) per byte it relayed.
  const double in = last.http_bytes["received"] - first.http_bytes["received"];
  const double out = last.http_bytes["sent"] - first.http_bytes["sent"];
  std::printf("COST front: %.0f bytes received, %.0f sent, %.2f us of gate CPU per KiB sent, %.0f response bytes buffered at the last sample\n",
              in, out, out > 0 ? gate_phase * 1e6 / (out / 1024) : 0.0, last.buffered);
  if (reads > 0) {
    const double per_read = (last.phase["read"] - first.phase["read"]) / reads * 1e6;
    std::printf("COST\nCOST re-read: %.0f memory.stat reads, %.1f us each in the read phase (peak, pressure, limits when due)", reads, per_read);
    if (paced_stat_us > 0)
      std::printf("; bare pread + parse of memory.stat paced like the daemon %.1f us: %.2fx", paced_stat_us, per_read / paced_stat_us);
    if (paced_trio_us > 0)
      std::printf("; with memory.pressure and memory.peak %.1f us: %.2fx", paced_trio_us, per_read / paced_trio_us);
    std::printf("\n");
    std::printf("COST reads by reason:");
    for (const auto& [reason, v] : last.reasons)
      if (v > first.reasons[reason]) std::printf(" %s %.1f/s", reason.c_str(), (v - first.reasons[reason]) / window);
    std::printf("\n");
    // The floor of the job as configured: every cgroup's memory.current once
    // a second and, for each memory.stat read the policy made, a bare pread
    // + parse of memory.stat. What the daemon costs above it is its own work
    // (probing the other files, deciding, timing, rendering, compressing);
    // what the floor costs above the bare loop is the freshness asked for.
    if (bare_us > 0 && paced_stat_us > 0) {
      const double floor_us = bare_us + reads / window * paced_stat_us / n;
      std::printf("COST floor of this configuration (bare loop + its %.1f memory.stat reads per second, bare): %.2f us per "
                  "cgroup per second = %.2fx the bare loop; the whole daemon is %.2fx that floor\n",
                  reads / window, floor_us, floor_us / bare_us, per(whole) / floor_us);
    }
  }
  return 0;
}
