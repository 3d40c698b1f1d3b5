// memcg-premise: the premise of the cache on the running kernel, measured in
// the guest (tests/vm/run-bench.sh PREMISE=1). Over the cgroups below --root,
// quiet ones and the --busy leaves (each with a workload changing memory),
// it times on this thread's CPU clock a pread of memory.current and a pread
// + parse of memory.stat, both through descriptors kept open, in paced
// passes (every --interval seconds, as a collector reads), and counts the
// kernel's memcg flushes in each set's passes from a kprobe's hits
// (--kprobe NAME: its line in /sys/kernel/tracing/kprobe_profile; the
// periodic flusher's share, one every 2 s, is in the count too).
// Prints one PREMISE line per set.
// Usage: memcg-premise --root DIR --busy a,b,... [--label L] [--passes 20]
//                      [--interval 0.25] [--sample 1000] [--kprobe NAME]
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/parse/flat_keyed.h"
#include "base/parse/stat_keys.h"
#include "tests/bench/thread_cpu.h"

using memcg::bench::thread_cpu_seconds;

namespace {

struct Options {
  std::string root, label = "premise", kprobe;
  std::vector<std::string> busy;
  int passes = 20, sample = 1000;
  double interval = 0.25;
};

struct Cgroup {
  int current = -1, stat = -1;
};

// Hits of the kprobe so far (kprobe_profile: "  NAME  HITS  MISSES"); -1 if none.
long kprobe_hits(const std::string& name) {
  if (name.empty()) return -1;
  std::ifstream in("/sys/kernel/tracing/kprobe_profile");
  std::string ev;
  long hits = 0, misses = 0;
  while (in >> ev >> hits >> misses)
    if (ev == name) return hits;
  return -1;
}

Cgroup open_cgroup(const std::string& dir) {
  return {open((dir + "/memory.current").c_str(), O_RDONLY | O_CLOEXEC), open((dir + "/memory.stat").c_str(), O_RDONLY | O_CLOEXEC)};
}

// Every cgroup below root but the busy leaves and their ancestors, up to `limit`.
void collect_quiet(const std::string& dir, const std::set<std::string>& skip, size_t limit, std::vector<Cgroup>& out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> subs;
  while (const dirent* e = readdir(d))
    if (e->d_type == DT_DIR && e->d_name[0] != '.') subs.push_back(dir + "/" + e->d_name);
  closedir(d);
  for (const auto& s : subs) {
    if (out.size() >= limit) return;
    if (!skip.count(s)) {
      Cgroup c = open_cgroup(s);
      if (c.current >= 0 && c.stat >= 0) out.push_back(c);
    }
    collect_quiet(s, skip, limit, out);
  }
}

void measure(const Options& o, const char* set, const std::vector<Cgroup>& cgs) {
  static char buf[16384];
  memcg::parse::StatValues values;
  memcg::parse::LayoutCache layout;
  double cur_cpu = 0, stat_cpu = 0;
  long reads = 0;
  const long hits0 = kprobe_hits(o.kprobe);
  const auto start = std::chrono::steady_clock::now();
  for (int p = 0; p < o.passes; ++p) {
    const auto next = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.interval);
    for (const Cgroup& c : cgs) {
      const double t0 = thread_cpu_seconds();
      if (pread(c.current, buf, sizeof buf, 0) < 0) perror("pread memory.current");
      const double t1 = thread_cpu_seconds();
      const ssize_t n = pread(c.stat, buf, sizeof buf, 0);
      if (n > 0) memcg::parse::parse_flat_keyed({buf, static_cast<size_t>(n)}, memcg::parse::stat_key_table(), layout, values.out());
      const double t2 = thread_cpu_seconds();
      cur_cpu += t1 - t0;
      stat_cpu += t2 - t1;
      ++reads;
    }
    std::this_thread::sleep_until(next);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long hits = o.kprobe.empty() ? -1 : kprobe_hits(o.kprobe) - hits0;
  std::printf("PREMISE %s %s cgroups=%zu passes=%d seconds=%.1f current_us=%.2f stat_us=%.2f ratio=%.2f flushes=%ld "
              "periodic=%.0f flushes_per_100_reads=%.2f\n",
              o.label.c_str(), set, cgs.size(), o.passes, secs, cur_cpu / static_cast<double>(reads) * 1e6,
              stat_cpu / static_cast<double>(reads) * 1e6, stat_cpu / cur_cpu, hits, secs / 2.0,
              hits < 0 ? -1.0 : 100.0 * std::max(0.0, static_cast<double>(hits) - secs / 2.0) / static_cast<double>(reads));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--root") o.root = v;
    else if (k == "--label") o.label = v;
    else if (k == "--kprobe") o.kprobe = v;
    else if (k == "--passes") o.passes = std::atoi(v.c_str());
    else if (k == "--interval") o.interval = std::atof(v.c_str());
    else if (k == "--sample") o.sample = std::atoi(v.c_str());
    else if (k == "--busy") {
      std::stringstream ss(v);
      for (std::string b; std::getline(ss, b, ',');)
        if (!b.empty()) o.busy.push_back(b);
    } else {
      std::fprintf(stderr, "memcg-premise: unknown option %s\n", k.c_str());
      return 64;
    }
  }
  if (o.root.empty() || o.busy.empty()) {
    std::fprintf(stderr, "usage: memcg-premise --root DIR --busy a,b,... [--label L] [--passes N] [--interval S] [--sample N] [--kprobe NAME]\n");
    return 64;
  }
  std::set<std::string> skip;  // the busy leaves and their ancestors move with them
  std::vector<Cgroup> busy;
  for (const auto& b : o.busy) {
    busy.push_back(open_cgroup(o.root + "/" + b));
    for (std::string p = b; !p.empty(); p = p.find('/') == std::string::npos ? "" : p.substr(0, p.rfind('/')))
      skip.insert(o.root + "/" + p);
  }
  std::vector<Cgroup> quiet;
  collect_quiet(o.root, skip, static_cast<size_t>(o.sample), quiet);
  measure(o, "quiet", quiet);
  measure(o, "busy", busy);
  return 0;
}
