// memcg-cadvisor-style: what the memory part of a cAdvisor-style collector
// costs over the same cgroups, for comparison with memcg-exporter (printed
// by tests/vm/run-netdata.sh next to netdata and the exporter).
//
// cAdvisor collects each container (with docker_only=false: every cgroup)
// once per housekeeping interval (its flag's default 1 s; the kubelet
// passes 10 s) through runc's libcontainer cgroup manager, GetStats(). Its
// memory part on cgroup v2 (opencontainers/runc,
// libcontainer/cgroups/fs2/memory.go, statMemory and getMemoryDataV2) opens,
// reads to the end and closes, by path, for every cgroup:
//   memory.stat, parsed into a map of every key;
//   memory.numa_stat of the cgroup and, walking its directory, of every
//   descendant (getPageUsageByNUMAV2 recurses through os.ReadDir);
//   memory.current, memory.max, memory.swap.current, memory.swap.max.
// This loop does the same, in C++: no garbage collector, no goroutines and
// none of GetStats' cpu, io, pids, hugetlb and rdma files, so it is a lower
// bound of what cAdvisor's memory collection costs per cgroup.
//
// Usage: memcg-cadvisor-style ROOT [--seconds 60] [--interval 1]
// Prints "CADVISOR_STYLE ..." lines: CPU per cgroup per second (the loop's
// thread CPU clock), files and directories read per round.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tests/bench/thread_cpu.h"

using memcg::bench::thread_cpu_seconds;

namespace {

struct Round {
  uint64_t files = 0, dirs = 0, failed = 0;
};

// Opens `rel` under the root, reads it to the end, closes it (what
// os.ReadFile and a bufio.Scanner over an opened file both do).
bool slurp(int root, const std::string& rel, std::string& out, Round& r) {
  out.clear();
  const int fd = openat(root, rel.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ++r.failed;
    return false;
  }
  char buf[4096];
  for (ssize_t got; (got = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(got));
  close(fd);
  ++r.files;
  return true;
}

uint64_t to_u64(std::string_view s) {
  uint64_t v = 0;
  if (s == "max") return UINT64_MAX;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// "key value" lines into a fresh map, as statMemory fills Stats[key].
void parse_stat(std::string_view text, std::unordered_map<std::string, uint64_t>& m) {
  m.clear();
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const size_t sp = line.find(' ');
    if (sp != std::string_view::npos) m[std::string(line.substr(0, sp))] = to_u64(line.substr(sp + 1));
  }
}

// "anon N0=.. N1=.." lines: the totals and per-node values of anon, file
// and unevictable, as getNUMAFieldV2 keeps them.
uint64_t parse_numa(std::string_view text, std::map<int, uint64_t>& nodes) {
  uint64_t total = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const size_t sp = line.find(' ');
    const std::string_view key = line.substr(0, sp);
    if (sp == std::string_view::npos || (key != "anon" && key != "file" && key != "unevictable")) continue;
    for (line.remove_prefix(sp + 1); !line.empty();) {
      const size_t next = line.find(' ');
      const std::string_view col = line.substr(0, next);
      line.remove_prefix(next == std::string_view::npos ? line.size() : next + 1);
      const size_t eq = col.find('=');
      if (eq == std::string_view::npos || col.size() < 2 || col[0] != 'N') continue;
      const uint64_t v = to_u64(col.substr(eq + 1));
      nodes[std::atoi(std::string(col.substr(1, eq - 1)).c_str())] += v;
      total += v;
    }
  }
  return total;
}

// The subdirectories of `rel` (os.ReadDir: the whole directory, every time).
std::vector<std::string> subdirs(int root, const std::string& rel, Round& r) {
  std::vector<std::string> out;
  const int fd = openat(root, rel.empty() ? "." : rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return out;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return out;
  }
  ++r.dirs;
  while (dirent* e = readdir(d))
    if (e->d_type == DT_DIR && e->d_name[0] != '.') out.push_back(rel.empty() ? e->d_name : rel + "/" + e->d_name);
  closedir(d);
  return out;
}

// getPageUsageByNUMAV2: the cgroup's numa_stat, then each descendant's
// (none where the file is missing: it returns there).
uint64_t numa_walk(int root, const std::string& rel, std::string& buf, Round& r) {
  std::map<int, uint64_t> nodes;
  if (!slurp(root, rel.empty() ? "memory.numa_stat" : rel + "/memory.numa_stat", buf, r)) return 0;
  uint64_t total = parse_numa(buf, nodes);
  for (const std::string& sub : subdirs(root, rel, r)) total += numa_walk(root, sub, buf, r);
  return total;
}

// getMemoryDataV2: NAME.current, then NAME.max unless the first is missing.
uint64_t usage_and_limit(int root, const std::string& prefix, const char* name, std::string& buf, Round& r) {
  if (!slurp(root, prefix + name + ".current", buf, r)) return 0;
  uint64_t sum = to_u64(buf.substr(0, buf.find('\n')));
  if (slurp(root, prefix + name + ".max", buf, r)) sum += to_u64(buf.substr(0, buf.find('\n')));
  return sum;
}

// One container's memory stats, as statMemory reads them.
uint64_t stat_memory(int root, const std::string& rel, std::string& buf, Round& r) {
  const std::string prefix = rel.empty() ? "" : rel + "/";
  std::unordered_map<std::string, uint64_t> stats;
  if (!slurp(root, prefix + "memory.stat", buf, r)) return 0;
  parse_stat(buf, stats);
  return stats.size() + numa_walk(root, rel, buf, r) + usage_and_limit(root, prefix, "memory", buf, r) +
         usage_and_limit(root, prefix, "memory.swap", buf, r);
}

// Every cgroup under the root that has memory.stat, by relative path.
void list_cgroups(int root, const std::string& rel, std::vector<std::string>& out) {
  if (faccessat(root, (rel.empty() ? std::string("memory.stat") : rel + "/memory.stat").c_str(), R_OK, 0) == 0)
    out.push_back(rel);
  Round ignored;
  for (const std::string& sub : subdirs(root, rel, ignored)) list_cgroups(root, sub, out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: memcg-cadvisor-style ROOT [--seconds 60] [--interval 1]\n");
    return 64;
  }
  double seconds = 60, interval = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--interval") == 0) interval = std::atof(argv[i + 1]);
  }
  const int root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0 || seconds <= 0 || interval <= 0) {
    std::fprintf(stderr, "memcg-cadvisor-style: cannot open %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  std::vector<std::string> cgroups;
  list_cgroups(root, "", cgroups);
  std::string buf;
  Round r;
  volatile uint64_t sink = 0;  // what was read is used
  const int rounds = std::max(1, static_cast<int>(seconds / interval));
  const auto t0 = std::chrono::steady_clock::now();
  double cpu = 0;
  for (int i = 0; i < rounds; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(i * interval));
    const double c0 = thread_cpu_seconds();
    for (const std::string& cg : cgroups) sink = sink + stat_memory(root, cg, buf, r);
    cpu += thread_cpu_seconds() - c0;
  }
  close(root);
  const double n = static_cast<double>(cgroups.size());
  std::printf("CADVISOR_STYLE cgroups=%zu interval=%.0fs rounds=%d: %.2f us per cgroup per second; per round %.0f files "
              "and %.0f directories read, %.0f opens failed\n",
              cgroups.size(), interval, rounds, n > 0 ? cpu / n / (rounds * interval) * 1e6 : 0.0,
              static_cast<double>(r.files) / rounds, static_cast<double>(r.dirs) / rounds,
              static_cast<double>(r.failed) / rounds);
  return 0;
}
