// containerd-bench [--containers N] [--seconds S]: what a resync costs the
// exporter's containerd client. A fake containerd in a child process (this
// binary with --serve) holds N containers shaped like a CRI node's (the CRI
// labels, an OCI spec with a seccomp profile, ~16 KB); this process lists them
// every 100 ms for S seconds and prints the CPU per list (this process: the
// lookup worker and gRPC's own threads) and the resident memory before the
// client started and with its records. Numbers vary with the host: compare
// runs made side by side.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "plugin/runtime/containerd_client.h"
#include "tests/fixtures/fake_containerd.h"

extern char** environ;

namespace {

using namespace memcg;

long rss_kb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// An OCI spec as the CRI plugin writes one: process, mounts, the cgroup, and
// the RuntimeDefault seccomp profile that makes up most of its size.
std::string cri_spec(const std::string& id, const std::string& uid) {
  std::string syscalls;
  for (int i = 0; i < 300; ++i) syscalls += (i ? ",\"" : "\"") + std::string("syscall_") + std::to_string(i) + "\"";
  std::string mounts;
  for (int i = 0; i < 15; ++i)
    mounts += (i ? "," : "") + std::string(R"({"destination":"/mnt/m)") + std::to_string(i) +
              R"(","type":"bind","source":"/var/lib/kubelet/pods/)" + uid + R"(/volumes/v)" + std::to_string(i) +
              R"(","options":["rbind","rprivate","rw"]})";
  return R"({"ociVersion":"1.0.2-dev","process":{"user":{"uid":0,"gid":0},"args":["/bin/app","--serve"],)"
         R"("env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","HOSTNAME=web-0","KUBERNETES_PORT=tcp://10.96.0.1:443"],)"
         R"("cwd":"/","capabilities":{"bounding":["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FOWNER","CAP_KILL","CAP_NET_BIND_SERVICE"]}},)"
         R"("root":{"path":"rootfs"},"mounts":[)" + mounts + R"(],)"
         R"("annotations":{"io.kubernetes.cri.container-type":"container","io.kubernetes.cri.sandbox-id":")" + id + R"("},)"
         R"("linux":{"resources":{"memory":{"limit":268435456}},"cgroupsPath":"kubepods-burstable-pod)" + uid +
         R"(.slice:cri-containerd:)" + id + R"(","namespaces":[{"type":"pid"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}],)"
         R"("seccomp":{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64"],"syscalls":[{"names":[)" + syscalls +
         R"(],"action":"SCMP_ACT_ALLOW"}]}}})";
}

int serve(const std::string& socket, int n) {
  fixtures::FakeContainerd containerd(socket);
  for (int i = 0; i < n; ++i) {
    char id[65];
    std::snprintf(id, sizeof id, "%064x", i + 1);
    const std::string uid = "0d3c6a1e-5b7f-4c2d-9e8f-" + std::string(id).substr(52);
    containerd.add("k8s.io", {id, "registry.example.org/team/app:1.2.3",
                              {{"io.kubernetes.container.name", "app"}, {"io.kubernetes.pod.name", "app-" + std::to_string(i)},
                               {"io.kubernetes.pod.namespace", "shop"}, {"io.kubernetes.pod.uid", uid},
                               {"io.cri-containerd.kind", "container"}},
                              "types.containerd.io/opencontainers/runtime-spec/1/Spec", cri_spec(id, uid)},
                   false);
  }
  char c;
  while (::read(0, &c, 1) > 0) {}  // until the parent goes
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 1000, seconds = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--serve")) return serve(argv[i + 1], std::stoi(argv[i + 2]));
    if (!std::strcmp(argv[i], "--containers")) n = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::stoi(argv[i + 1]);
  }
  const std::string socket = "/tmp/memcg-containerd-bench-" + std::to_string(::getpid()) + ".sock";
  int to_child[2];
  if (::pipe(to_child) != 0) return 1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
  posix_spawn_file_actions_addclose(&fa, to_child[1]);
  const std::string count = std::to_string(n);
  char* child_argv[] = {argv[0], const_cast<char*>("--serve"), const_cast<char*>(socket.c_str()),
                        const_cast<char*>(count.c_str()), nullptr};
  pid_t child = 0;
  if (posix_spawn(&child, argv[0], &fa, nullptr, child_argv, environ) != 0) return 1;
  ::close(to_child[0]);
  struct stat sb{};
  for (int i = 0; i < 600 && ::stat(socket.c_str(), &sb) != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));

  const long rss_before = rss_kb();
  runtime::LookupWorker worker;
  runtime::ContainerdClient client({.socket = socket, .resync = std::chrono::milliseconds(100)}, worker);
  while (client.stats().lists_ok == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto lists0 = client.stats().lists_ok;
  const double cpu0 = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const auto lists = client.stats().lists_ok - lists0;
  const double cpu = cpu_seconds() - cpu0;
  std::printf("CONTAINERD containers=%d named=%zu lists=%llu cpu_per_list_ms=%.2f cpu_per_container_us=%.1f "
              "rss_before_kb=%ld rss_with_records_kb=%ld\n",
              n, client.records()->size(), static_cast<unsigned long long>(lists), 1e3 * cpu / static_cast<double>(lists),
              1e6 * cpu / static_cast<double>(lists) / n, rss_before, rss_kb());
  ::close(to_child[1]);
  ::waitpid(child, nullptr, 0);
  ::unlink(socket.c_str());
  return 0;
}
