// memcg-exporter-oci-hook STAGE [RECORDS_DIR]: an OCI runtime hook (podman,
// CRI-O via /usr/share/containers/oci/hooks.d). At createRuntime it records the
// container's name, image, pod and namespace in RECORDS_DIR/<id>.json
// (default /run/memcg-exporter/containers); at poststop it removes the record.
// It never fails or delays a container: every problem is logged to stderr and
// the exit status is 0; a watchdog alarm ends it after 2 s.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "plugin/runtime/oci_record.h"

namespace {

void on_alarm(int) {
  static const char msg[] = "memcg-exporter-oci-hook: timed out reading the OCI state; skipped\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
  ::_exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGALRM, on_alarm);
  ::alarm(2);
  if (argc < 2) {
    std::fprintf(stderr, "usage: memcg-exporter-oci-hook createRuntime|poststop [RECORDS_DIR] < state.json\n");
    return 0;
  }
  const std::string dir = argc > 2 ? argv[2] : "/run/memcg-exporter/containers";
  std::string state;
  char buf[8192];
  for (ssize_t n; state.size() <= memcg::runtime::kMaxStateBytes && (n = ::read(STDIN_FILENO, buf, sizeof buf)) > 0;)
    state.append(buf, static_cast<size_t>(n));
  const std::string msg = memcg::runtime::run_hook(argv[1], state, dir);
  if (!msg.empty()) std::fprintf(stderr, "memcg-exporter-oci-hook: %s\n", msg.c_str());
  return 0;
}
