// memcg-vmoom: a container-like cgroup whose task is OOM-killed and which is
// removed within 100 ms, as a runtime removes a dead container; what the
// exporter serves of it, timed from the kill.
//   memcg-vmoom CGROUP_DIR CGROUP_PATH PORT   (the path as the exporter names it)
// Creates CGROUP_DIR (memory.max 32 MiB) with a task in it, waits until the
// exporter collects it (its memcg_cgroup_info on /metrics), makes the task
// allocate past the limit, reaps it (the kill), removes the cgroup at once,
// and polls /metrics until the kill shows (memcg_memory_events_total
// oom_kill of the cgroup's id) and the removal is marked. Prints
//   VMOOM id=ID kill_to_removed_ms=X kill_to_metrics_ms=Y removed_marked=1 exit_reads=N
// (N: the cgroup.events reads the exit brought, at least 1) and exits 0, or
// says what failed and exits 1.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "tests/vm/http_get.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

bool write_file(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// The task: joins the cgroup, waits for the word, then allocates until killed.
[[noreturn]] void task(const std::string& dir, int go) {
  if (!write_file(dir + "/cgroup.procs", "0")) _exit(2);
  char c;
  if (read(go, &c, 1) != 1) _exit(3);
  for (;;) {
    void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(4);
    std::memset(p, 0x5a, 1 << 20);
  }
}

// memcg_exporter_file_reads_total{file="cgroup.events"} in a /metrics body, -1 if absent.
long exit_reads(const std::string& body) {
  const std::string series = "memcg_exporter_file_reads_total{file=\"cgroup.events\"} ";
  const size_t at = body.find(series);
  return at == std::string::npos ? -1 : std::atol(body.c_str() + at + series.size());
}

bool fail(const char* what) {
  std::printf("VMOOM FAIL %s\n", what);
  std::fflush(stdout);
  return false;
}

// Milliseconds from `from` until /metrics holds `needle`, polled every
// `step_us`; -1 if it did not within `limit_ms`.
double ms_until_served(int port, const std::string& needle, Clock::time_point from, double limit_ms, useconds_t step_us) {
  while (ms_since(from) < limit_ms) {
    if (http_get(port, "/metrics").find(needle) != std::string::npos) return ms_since(from);
    usleep(step_us);
  }
  return -1;
}

// After the removal: whether /metrics marks it and keeps the kill (the
// tombstone) within 30 s, and the exporter's cgroup.events reads by then.
struct AfterRemoval {
  bool kept = false;
  long exit_reads = -1;
};
AfterRemoval after_removal(int port, const std::string& id, const std::string& kill) {
  const std::string marked = "memcg_cgroup_removed_timestamp_seconds{cgroup_id=\"" + id + "\"}";
  AfterRemoval out;
  for (int i = 0; i < 300 && !out.kept; ++i) {
    const std::string m = http_get(port, "/metrics");
    out.kept = m.find(marked) != std::string::npos && m.find(kill) != std::string::npos;
    out.exit_reads = exit_reads(m);
    if (!out.kept) usleep(100'000);
  }
  return out;
}

bool run(const std::string& dir, const std::string& rel, int port) {
  if (mkdir(dir.c_str(), 0755) != 0 || !write_file(dir + "/memory.max", "33554432")) return fail("cgroup setup");
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0) return fail("stat");
  const std::string id = std::to_string(st.st_ino);
  int go[2];
  if (pipe(go) != 0) return fail("pipe");
  const pid_t pid = fork();
  if (pid == 0) task(dir, go[0]);
  // Collected: its info is served (a rescan found it).
  const std::string info = "memcg_cgroup_info{cgroup_id=\"" + id + "\",cgroup=\"" + rel + "\"";
  if (ms_until_served(port, info, Clock::now(), 60'000, 100'000) < 0) return fail("not collected within 60 s");
  const long exits_before = exit_reads(http_get(port, "/metrics"));
  if (write(go[1], "g", 1) != 1) return fail("go");
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
    return fail("the task was not killed");
  const auto t_kill = Clock::now();
  std::printf("VMOOM killed id=%s\n", id.c_str());
  std::fflush(stdout);
  // Removed as a runtime would, while the kill is polled for.
  std::atomic<double> removed_ms{-1};
  std::thread remover([&] {
    while (rmdir(dir.c_str()) != 0 && ms_since(t_kill) < 1000) usleep(1000);
    removed_ms = ms_since(t_kill);
  });
  const std::string kill = "memcg_memory_events_total{cgroup_id=\"" + id + "\",event=\"oom_kill\"} 1\n";
  const double seen_ms = ms_until_served(port, kill, t_kill, 5000, 2000);
  remover.join();
  if (removed_ms < 0 || removed_ms > 100) return fail("not removed within 100 ms of the kill");
  if (seen_ms < 0) return fail("the kill never showed on /metrics");
  const AfterRemoval after = after_removal(port, id, kill);
  std::printf("VMOOM id=%s kill_to_removed_ms=%.1f kill_to_metrics_ms=%.1f removed_marked=%d exit_reads=%ld\n",
              id.c_str(), removed_ms.load(), seen_ms, after.kept ? 1 : 0, after.exit_reads - exits_before);
  std::fflush(stdout);
  if (!after.kept) return fail("the removed cgroup's kill was not kept");
  // The task's exit flagged the cgroup's cgroup.events and the exporter read
  // it (and the event files with it) before the cgroup was removed.
  return (exits_before >= 0 && after.exit_reads > exits_before) ||
         fail("no cgroup.events read after the exit (memcg_exporter_file_reads_total{file=\"cgroup.events\"})");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: memcg-vmoom CGROUP_DIR CGROUP_PATH PORT\n");
    return 2;
  }
  return run(argv[1], argv[2], std::atoi(argv[3])) ? 0 : 1;
}
