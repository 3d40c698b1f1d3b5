// The cgroup directory watch on a real filesystem: what a write or an
// attribute set reports, what it leaves out, and what a lost queue says.
#include "plugin/cgroupfs/dir_watch.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "plugin/cgroupfs/kept_file.h"

namespace memcg::cgroupfs {
namespace {

class DirWatchTest : public ::testing::Test {
 protected:
  DirWatchTest() {
    char tmpl[] = "/tmp/memcg-dirwatch-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    fd_ = open_at(AT_FDCWD, dir_.c_str()).value().release();
  }
  ~DirWatchTest() override {
    ::close(fd_);
    std::filesystem::remove_all(dir_);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }
  DirWatch watch(DirWatcher& w) {
    int err = 0;
    DirWatch d = w.add(FileIo::system(), fd_, dir_, err);
    EXPECT_EQ(err, 0);
    return d;
  }

  std::string dir_;
  int fd_ = -1;
};

TEST_F(DirWatchTest, ALimitWrittenIsReportedAndOtherFilesAreNot) {
  DirWatcher w;
  ASSERT_TRUE(w.ok()) << std::strerror(w.error());
  DirWatch d = watch(w);
  ASSERT_TRUE(d.active());
  WatchEvents ev;
  w.drain(ev);
  EXPECT_FALSE(ev.any());
  write("memory.current", "4096\n");
  write("memory.events", "oom 0\n");
  write("cgroup.procs", "1\n");
  w.drain(ev);
  EXPECT_TRUE(ev.changed.empty()) << "files that are not limits say nothing";
  for (const char* name : {"memory.max", "memory.high", "memory.low", "memory.min", "memory.swap.max"}) {
    write(name, "1048576\n");
    write(name, "2097152\n");
    w.drain(ev);
    EXPECT_EQ(ev.changed, std::vector<int>{d.wd()}) << name << ": once per drain, however many writes";
  }
  w.drain(ev);
  EXPECT_FALSE(ev.any()) << "a drain takes what it reports";
}

TEST_F(DirWatchTest, TheDirectorysOwnAttributesAreReported) {
  DirWatcher w;
  DirWatch d = watch(w);
  if (::setxattr(dir_.c_str(), "user.oomd_ooms", "1", 1, 0) != 0) GTEST_SKIP() << "no user xattrs here: " << std::strerror(errno);
  WatchEvents ev;
  w.drain(ev);
  EXPECT_EQ(ev.changed, std::vector<int>{d.wd()}) << "systemd-oomd's record of a kill";
}

TEST_F(DirWatchTest, AWatchGoneWithItsHandleReportsNothingMore) {
  DirWatcher w;
  DirWatch d = watch(w);
  const int wd = d.wd();
  d.reset();
  EXPECT_FALSE(d.active());
  write("memory.max", "1048576\n");
  WatchEvents ev;
  w.drain(ev);
  EXPECT_TRUE(ev.changed.empty());
  EXPECT_EQ(ev.lost, std::vector<int>{wd}) << "the kernel confirms the removal";
}

TEST_F(DirWatchTest, OneInodeGetsOneWatch) {
  DirWatcher w;
  DirWatch d = watch(w);
  int err = 0;
  DirWatch again = w.add(FileIo::system(), fd_, dir_, err);
  EXPECT_FALSE(again.active());
  EXPECT_EQ(err, EEXIST) << "a second handle would share the first's descriptor and remove it when it went";
  DirWatch moved = std::move(d);
  EXPECT_TRUE(moved.active());
  EXPECT_FALSE(d.active());
}

TEST_F(DirWatchTest, AFullQueueSaysEverythingMayHaveChanged) {
  std::ifstream limit("/proc/sys/fs/inotify/max_queued_events");
  long queued = 0;
  limit >> queued;
  if (queued <= 0 || queued > 100000) GTEST_SKIP() << "max_queued_events " << queued;
  DirWatcher w;
  DirWatch d = watch(w);
  // Alternating names: identical events in a row are merged into one.
  for (long i = 0; i <= queued; ++i) write(i % 2 ? "memory.max" : "memory.high", "1\n");
  WatchEvents ev;
  w.drain(ev);
  EXPECT_TRUE(ev.overflow);
  EXPECT_TRUE(ev.any());
}

class RefusingIo final : public FileIo {
 public:
  ssize_t pread(int fd, char* buf, size_t len, off_t off) noexcept override { return FileIo::system().pread(fd, buf, len, off); }
  bool host_has_swap() noexcept override { return false; }
  int add_watch(int, const char*, uint32_t) noexcept override {
    errno = ENOSPC;
    return -1;
  }
};

TEST_F(DirWatchTest, ARefusedWatchSaysWhy) {
  DirWatcher w;
  RefusingIo io;
  int err = 0;
  DirWatch d = w.add(io, fd_, dir_, err);
  EXPECT_FALSE(d.active());
  EXPECT_EQ(err, ENOSPC);
}

}  // namespace
}  // namespace memcg::cgroupfs
