// memcg-open-layout: what the order in which kept files were opened does to
// a loop of preads over one file of each group (docs/performance-history.md, "Files
// opened kind by kind").
//
//   memcg-open-layout LIST GROUP ROUNDS
//
// LIST names readable kernfs files (cgroup or sysfs files), one per line, in
// groups of GROUP: the first of each group is the one the loop reads (a
// cgroup's memory.current), the others stand for the rest of what a
// collector keeps open for it. The same first files are opened three ways,
// each file read once after its open (its seq_file buffer allocated):
//   sweep     every group's first file, one after another (a bare loop's way)
//   grouped   each group's files together, group after group (a cgroup at a time)
//   grouped-read-apart  as grouped, but the first files read in one sweep
//                       before the rest (their buffers allocated together)
// and read in alternating order for ROUNDS rounds. Prints the CPU per read
// of each and the ratios; informational, no pass or fail.
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

char buf[8192];

int open_read(const std::string& path, bool read_now) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
  if (read_now) (void)!pread(fd, buf, sizeof buf, 0);
  return fd;
}

struct Layouts {
  std::vector<int> sweep, grouped, apart, rest;  // `rest`: held open, never read by the loop
};

Layouts open_all(const std::vector<std::string>& files, size_t group) {
  Layouts l;
  for (size_t i = 0; i + group <= files.size(); i += group)
    for (size_t j = 0; j < group; ++j) (j == 0 ? l.grouped : l.rest).push_back(open_read(files[i + j], true));
  std::vector<int> apart_rest;
  for (size_t i = 0; i + group <= files.size(); i += group)
    for (size_t j = 0; j < group; ++j) (j == 0 ? l.apart : apart_rest).push_back(open_read(files[i + j], false));
  for (int fd : l.apart) (void)!pread(fd, buf, sizeof buf, 0);
  for (int fd : apart_rest) (void)!pread(fd, buf, sizeof buf, 0);
  l.rest.insert(l.rest.end(), apart_rest.begin(), apart_rest.end());
  for (size_t i = 0; i + group <= files.size(); i += group) l.sweep.push_back(open_read(files[i], true));
  return l;
}

double loop(const std::vector<int>& fds) {
  const double t0 = thread_cpu();
  for (int fd : fds) (void)!pread(fd, buf, 64, 0);
  return thread_cpu() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: memcg-open-layout LIST GROUP ROUNDS\n");
    return 2;
  }
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  std::vector<std::string> files;
  std::ifstream in(argv[1]);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) files.push_back(line);
  const size_t group = static_cast<size_t>(std::atoi(argv[2]));
  const int rounds = std::atoi(argv[3]);
  if (group == 0 || rounds <= 0 || files.size() < group) {
    std::fprintf(stderr, "memcg-open-layout: need GROUP > 0, ROUNDS > 0 and at least one group of files\n");
    return 2;
  }
  const Layouts l = open_all(files, group);
  double sweep = 0, grouped = 0, apart = 0;
  for (int r = 0; r < rounds; ++r) {  // alternating order: neither always reads after the other
    if (r % 2 == 0) {
      sweep += loop(l.sweep);
      grouped += loop(l.grouped);
      apart += loop(l.apart);
    } else {
      apart += loop(l.apart);
      grouped += loop(l.grouped);
      sweep += loop(l.sweep);
    }
    usleep(100000);
  }
  const double n = static_cast<double>(l.sweep.size()) * rounds;
  std::printf("LAYOUT groups=%zu of %zu, %d rounds: sweep %.3f us/read, grouped %.3f (%.3fx), grouped-read-apart %.3f (%.3fx)\n",
              l.sweep.size(), group, rounds, sweep / n * 1e6, grouped / n * 1e6, grouped / sweep, apart / n * 1e6,
              apart / sweep);
  return 0;
}
