// memcg-exporter-identity [--containerd-socket PATH] [--namespace NS]...
//                         [--records DIR] [--resync SECONDS]
// Keeps DIR (default /run/memcg-exporter/containers) equal to the containers
// containerd's API knows in the given namespaces (default k8s.io): one record
// file per container, in the OCI hook's format, which the exporter reads with
// the cgroupsPath check it applies to hook records. Runs until SIGTERM or
// SIGINT. It listens on nothing; its errors go to stderr, once per failing
// spell (the containerd client's), and each sync's changes as one line.
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "plugin/clock.h"
#include "plugin/runtime/containerd_client.h"
#include "plugin/runtime/lookup_worker.h"
#include "plugin/runtime/record_mirror.h"

namespace {

using memcg::runtime::ContainerdClient;

struct Args {
  ContainerdClient::Options containerd;
  std::string records = "/run/memcg-exporter/containers";
  int resync_seconds = 60;  // the directory written again even without a change (a file removed by hand)
};

bool parse(int argc, char** argv, Args& a) {
  bool namespaces_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    if (arg == "--containerd-socket") a.containerd.socket = value;
    else if (arg == "--records") a.records = value;
    else if (arg == "--resync") a.resync_seconds = std::atoi(value);
    else if (arg == "--namespace") {
      if (!namespaces_given) a.containerd.namespaces.clear();
      namespaces_given = true;
      a.containerd.namespaces.push_back(value);
    } else {
      return false;
    }
  }
  return a.resync_seconds > 0 && !a.records.empty() && !a.containerd.namespaces.empty();
}

// Waits up to a second for SIGTERM or SIGINT (blocked, so taken here).
bool stop_requested(const sigset_t& stop) {
  const timespec second{1, 0};
  return ::sigtimedwait(&stop, nullptr, &second) > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) {
    std::fprintf(stderr, "usage: memcg-exporter-identity [--containerd-socket PATH] [--namespace NS]... "
                         "[--records DIR] [--resync SECONDS]\n");
    return 64;
  }
  sigset_t stop;
  ::sigemptyset(&stop);
  ::sigaddset(&stop, SIGTERM);
  ::sigaddset(&stop, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before any thread starts: they inherit it
  std::fprintf(stderr, "memcg-exporter-identity: containerd %s -> %s\n", a.containerd.socket.c_str(), a.records.c_str());
  memcg::runtime::LookupWorker worker;
  ContainerdClient client(a.containerd, worker);
  memcg::runtime::RecordMirror mirror(a.records);
  uint64_t synced = 0;  // generation 0: nothing listed yet
  int since_sync = 0;
  while (!stop_requested(stop)) {
    for (const auto& e : client.take_errors()) std::fprintf(stderr, "memcg-exporter-identity: %s\n", e.message().c_str());
    const uint64_t gen = client.generation();
    if (gen == 0) continue;  // not listed yet: an empty map would remove every record
    if (gen == synced && ++since_sync < a.resync_seconds) continue;
    since_sync = 0;
    synced = gen;
    const auto records = client.records();
    const auto r = mirror.sync(*records);
    for (const auto& e : r.errors) std::fprintf(stderr, "memcg-exporter-identity: %s\n", e.c_str());
    if (r.written || r.removed)
      std::fprintf(stderr, "memcg-exporter-identity: %zu containers: %zu written, %zu removed\n", records->size(),
                   r.written, r.removed);
  }
  return 0;
}
