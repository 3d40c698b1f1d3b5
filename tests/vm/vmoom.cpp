// memcg-vmoom: a container-like cgroup whose task is OOM-killed and which is
// removed as soon as the kernel allows, as a runtime removes a dead
// container; what the exporter serves of it, timed from the kill.
//   memcg-vmoom CGROUP_DIR CGROUP_PATH PORT   (the path as the exporter names it)
// Creates CGROUP_DIR (memory.max 32 MiB) with a task in it, waits until the
// exporter collects it (its memcg_cgroup_info on /metrics), makes the task
// allocate past the limit, reaps it (the kill), removes the cgroup at once,
// and polls /metrics until the kill shows (memcg_memory_events_total
// oom_kill of the cgroup's id) and the removal is marked. Prints
//   VMOOM id=ID rmdir_tries=T kill_to_rmdir_ms=R kill_to_removed_ms=X
//         kill_to_metrics_ms=Y removed_marked=1 exit_reads=N recovered=K
// (N: the cgroup.events reads the exit brought, most often 1 or 2, and 0
// where a pass found the cgroup gone before the exit's wake-up ran: the
// host checks that the watch read some victim's exit; K: the kill
// events the exporter recovered from the parent's count because the cgroup
// was removed before its own counts were read, docs/oom.md) and exits 0, or
// says what failed (with what the exporter serves of the cgroup) and exits 1.
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
#include <utility>

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

// A series' value in a /metrics body (`series` with its trailing space, at
// the start of a line: not its # HELP), -1 if absent.
long served(const std::string& body, const std::string& series) {
  const size_t at = body.find("\n" + series);
  return at == std::string::npos ? -1 : std::atol(body.c_str() + at + 1 + series.size());
}
long exit_reads(const std::string& body) {
  return served(body, "memcg_exporter_file_reads_total{file=\"cgroup.events\"} ");
}
long recovered(const std::string& body) { return served(body, "memcg_exporter_removed_kills_recovered_total "); }

bool fail(const char* what) {
  std::printf("VMOOM FAIL %s\n", what);
  std::fflush(stdout);
  return false;
}

// What the exporter serves of cgroup `id` and of its own event handling, a
// line each (VMOOM SERVED ...): when a kill did not show, whether the cgroup
// was kept with a count of 0, marked removed, or not kept at all, and what
// its wake-ups read.
void print_served(int port, const std::string& id) {
  const std::string of_id = "cgroup_id=\"" + id + "\"";
  const std::string marked = "memcg_cgroup_removed_timestamp_seconds{" + of_id;
  std::string body = http_get(port, "/metrics");
  for (int i = 0; i < 150 && body.find(marked) == std::string::npos; ++i) {  // past the next rescan (10 s)
    usleep(100'000);
    body = http_get(port, "/metrics");
  }
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find('\n', at);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(at, end - at);
    const bool own = line.rfind("memcg_exporter_event", 0) == 0 || line.rfind("memcg_exporter_removed", 0) == 0 ||
                     line.rfind("memcg_exporter_file_reads_total{file=\"cgroup.events", 0) == 0 ||
                     line.rfind("memcg_exporter_file_reads_total{file=\"memory.events", 0) == 0;
    if (own || (line.find(of_id) != std::string::npos && line.find("_events_total") != std::string::npos) ||
        (line.find(of_id) != std::string::npos && line.find("removed") != std::string::npos))
      std::printf("VMOOM SERVED %s\n", line.c_str());
    at = end + 1;
  }
  std::fflush(stdout);
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
  long exit_reads = -1, recovered = -1;
};
AfterRemoval after_removal(int port, const std::string& id, const std::string& kill) {
  const std::string marked = "memcg_cgroup_removed_timestamp_seconds{cgroup_id=\"" + id + "\"}";
  AfterRemoval out;
  for (int i = 0; i < 300 && !out.kept; ++i) {
    const std::string m = http_get(port, "/metrics");
    out.kept = m.find(marked) != std::string::npos && m.find(kill) != std::string::npos;
    out.exit_reads = exit_reads(m);
    out.recovered = recovered(m);
    if (!out.kept) usleep(100'000);
  }
  return out;
}

// The cgroup removed as a runtime would: rmdir at once, and again every
// millisecond while the kernel answers EBUSY, for up to 1 s. Timed from the
// kill: the start of the call that succeeded (the cgroup's files go dead
// inside it: what the collector races) and its return; -1 if none did.
struct Removal {
  int tries = 0;
  double began_ms = -1, done_ms = -1;
};
Removal remove_at_once(const std::string& dir, Clock::time_point t_kill) {
  Removal r;
  for (;;) {
    const double began = ms_since(t_kill);
    ++r.tries;
    if (rmdir(dir.c_str()) == 0) {
      r.began_ms = began;
      r.done_ms = ms_since(t_kill);
      return r;
    }
    if (began >= 1000) return r;
    usleep(1000);
  }
}

// Polls /metrics for a kill from a thread started before it, so that nothing
// starts between the reap and the rmdir: with three guests side by side on
// two cores, starting a thread there took 3-32 ms (and the rmdir itself
// 2-94 ms: docs/oom.md#measured).
class KillPoller {
 public:
  KillPoller(int port, std::string needle) : port_(port), needle_(std::move(needle)), thread_([this] { run(); }) {}
  ~KillPoller() { finish(); }
  KillPoller(const KillPoller&) = delete;
  KillPoller& operator=(const KillPoller&) = delete;
  // Starts polling, timed from `t_kill`.
  void go(Clock::time_point t_kill) {
    t_kill_ = t_kill;
    phase_.store(kKilled, std::memory_order_release);
  }
  // Ms from the kill to the needle on /metrics, -1 if not within 5 s (or
  // never let go).
  double finish() {
    int expected = kWaiting;
    phase_.compare_exchange_strong(expected, kGivenUp);
    if (thread_.joinable()) thread_.join();
    return seen_ms_;
  }

 private:
  static constexpr int kWaiting = 0, kKilled = 1, kGivenUp = 2;
  void run() {
    int p;
    while ((p = phase_.load(std::memory_order_acquire)) == kWaiting) usleep(1000);
    if (p == kKilled) seen_ms_ = ms_until_served(port_, needle_, t_kill_, 5000, 2000);
  }
  int port_;
  std::string needle_;
  Clock::time_point t_kill_;
  std::atomic<int> phase_{kWaiting};
  double seen_ms_ = -1;  // written by the thread, read after the join
  std::thread thread_;   // last: started once the rest is initialized
};

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
  const std::string before = http_get(port, "/metrics");
  const long exits_before = exit_reads(before), recovered_before = recovered(before);
  const std::string kill = "memcg_memory_events_total{cgroup_id=\"" + id + "\",event=\"oom_kill\"} 1\n";
  KillPoller poller(port, kill);
  if (write(go[1], "g", 1) != 1) return fail("go");
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
    return fail("the task was not killed");
  const auto t_kill = Clock::now();
  poller.go(t_kill);
  const Removal removal = remove_at_once(dir, t_kill);
  std::printf("VMOOM killed id=%s\n", id.c_str());
  std::fflush(stdout);
  const double seen_ms = poller.finish();
  // 1 s: long before the next probe (probe_interval 10s), so what the
  // exporter serves of the kill can only come from its wake-up.
  if (removal.done_ms < 0) return fail("not removed within 1 s of the kill");
  if (seen_ms < 0) {
    print_served(port, id);
    return fail("the kill never showed on /metrics");
  }
  const AfterRemoval after = after_removal(port, id, kill);
  std::printf("VMOOM id=%s rmdir_tries=%d kill_to_rmdir_ms=%.1f kill_to_removed_ms=%.1f kill_to_metrics_ms=%.1f"
              " removed_marked=%d exit_reads=%ld recovered=%ld\n",
              id.c_str(), removal.tries, removal.began_ms, removal.done_ms, seen_ms, after.kept ? 1 : 0,
              after.exit_reads - exits_before, after.recovered - recovered_before);
  std::fflush(stdout);
  if (!after.kept) return fail("the removed cgroup's kill was not kept");
  return (exits_before >= 0 && after.exit_reads >= 0) ||
         fail("no memcg_exporter_file_reads_total{file=\"cgroup.events\"} served");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: memcg-vmoom CGROUP_DIR CGROUP_PATH PORT\n");
    return 2;
  }
  return run(argv[1], argv[2], std::atoi(argv[3])) ? 0 : 1;
}
