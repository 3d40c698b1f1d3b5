// memcg-vmload: workloads for the real-kernel VM tests, plus the verdict.
//   wave MB          anonymous memory: grow to MB 1 MiB at a time, shrink, repeat
//   hog MB           allocate and touch MB, then sleep (over memory.max: oom-killed)
//   spike MB         allocate and touch MB, give it back at once; every 2 s
//   files DIR MB     write a MB file on DIR (tmpfs: charged as shmem), delete, repeat
//   leak MB_PER_S    allocate and touch MB_PER_S MiB a second, forever (a leak)
//   exit N           leave QEMU with status (N << 1) | 1 via isa-debug-exit (port 0xf4)
#include <sys/io.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t kMiB = 1 << 20;

void* chunk() {
  void* p = mmap(nullptr, kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  std::memset(p, 0x5a, kMiB);  // touch every page so it is charged
  return p;
}

int wave(long mb) {
  std::vector<void*> held;
  for (;;) {
    for (long i = 0; i < mb; ++i) {
      held.push_back(chunk());
      usleep(50'000);
    }
    while (!held.empty()) {
      munmap(held.back(), kMiB);
      held.pop_back();
      usleep(50'000);
    }
  }
}

int hog(long mb) {
  for (long i = 0; i < mb; ++i) {
    chunk();
    usleep(10'000);
  }
  for (;;) pause();
}

// MB touched and given back at once, every 2 s: usage spikes for a few
// milliseconds, between the probes.
int spike(long mb) {
  for (;;) {
    std::vector<void*> held;
    for (long i = 0; i < mb; ++i) held.push_back(chunk());
    for (void* p : held) munmap(p, kMiB);
    sleep(2);
  }
}

int leak(double mb_per_s) {
  if (mb_per_s <= 0) return 64;
  const auto every = static_cast<useconds_t>(1e6 / mb_per_s);
  for (;;) {
    chunk();
    usleep(every);
  }
}

int files(const char* dir, long mb) {
  const std::string path = std::string(dir) + "/vmload." + std::to_string(getpid());
  std::vector<char> buf(kMiB, 'x');
  for (;;) {
    FILE* f = fopen(path.c_str(), "w");
    if (!f) {
      perror(path.c_str());
      return 1;
    }
    for (long i = 0; i < mb; ++i) {
      fwrite(buf.data(), 1, buf.size(), f);
      fflush(f);
      usleep(100'000);
    }
    fclose(f);
    usleep(500'000);
    unlink(path.c_str());
    usleep(500'000);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "wave" && argc == 3) return wave(std::atol(argv[2]));
  if (mode == "hog" && argc == 3) return hog(std::atol(argv[2]));
  if (mode == "spike" && argc == 3) return spike(std::atol(argv[2]));
  if (mode == "files" && argc == 4) return files(argv[2], std::atol(argv[3]));
  if (mode == "leak" && argc == 3) return leak(std::atof(argv[2]));
  if (mode == "exit" && argc == 3) {
    if (ioperm(0xf4, 4, 1) != 0) {
      perror("ioperm");
      return 1;
    }
    outl(static_cast<unsigned>(std::atoi(argv[2])), 0xf4);
    return 0;  // not reached under QEMU with isa-debug-exit
  }
  fprintf(stderr, "usage: memcg-vmload wave MB | hog MB | spike MB | files DIR MB | leak MB_PER_S | exit N\n");
  return 64;
}
