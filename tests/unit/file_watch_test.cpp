// The limit files' watches on a real filesystem: what a write reports,
// what it leaves out, and what a lost queue says.
#include "plugin/cgroupfs/file_watch.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "plugin/cgroupfs/kept_file.h"

namespace memcg::cgroupfs {
namespace {

class FileWatchTest : public ::testing::Test {
 protected:
  FileWatchTest() {
    char tmpl[] = "/tmp/memcg-filewatch-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    fd_ = open_at(AT_FDCWD, dir_.c_str()).value().release();
    for (const char* name : {"memory.max", "memory.high", "memory.current"}) write(name, "max\n");
  }
  ~FileWatchTest() override {
    ::close(fd_);
    std::filesystem::remove_all(dir_);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }
  Watch watch(WatchSet& w, const char* name) {
    int err = 0;
    Watch d = w.add(FileIo::system(), fd_, dir_, name, err);
    EXPECT_EQ(err, 0) << name;
    return d;
  }

  std::string dir_;
  int fd_ = -1;
};

TEST_F(FileWatchTest, AWriteIsReportedOncePerDrainAndOtherFilesSayNothing) {
  WatchSet w;
  ASSERT_TRUE(w.ok()) << std::strerror(w.error());
  Watch max = watch(w, "memory.max"), high = watch(w, "memory.high");
  ASSERT_TRUE(max.active() && high.active());
  WatchEvents ev;
  w.drain(ev);
  EXPECT_FALSE(ev.any());
  write("memory.current", "4096\n");
  char buf[64];
  const int rd = ::open((dir_ + "/memory.max").c_str(), O_RDONLY);
  ASSERT_GE(::read(rd, buf, sizeof buf), 0);
  ::close(rd);
  w.drain(ev);
  EXPECT_FALSE(ev.any()) << "an unwatched file's write and a watched file's read say nothing";
  write("memory.max", "1048576\n");
  write("memory.max", "2097152\n");
  w.drain(ev);
  EXPECT_EQ(ev.changed, std::vector<int>{max.wd()}) << "once per drain, however many writes";
  write("memory.high", "1048576\n");
  write("memory.max", "1048576\n");
  w.drain(ev);
  EXPECT_EQ(ev.changed.size(), 2u);
  w.drain(ev);
  EXPECT_FALSE(ev.any()) << "a drain takes what it reports";
}

TEST_F(FileWatchTest, AWatchGoneWithItsHandleReportsNothingMore) {
  WatchSet w;
  Watch d = watch(w, "memory.max");
  const int wd = d.wd();
  d.reset();
  EXPECT_FALSE(d.active());
  write("memory.max", "1048576\n");
  WatchEvents ev;
  w.drain(ev);
  EXPECT_TRUE(ev.changed.empty());
  EXPECT_EQ(ev.lost, std::vector<int>{wd}) << "the kernel confirms the removal";
}

TEST_F(FileWatchTest, OneInodeGetsOneWatchAndAMissingFileNone) {
  WatchSet w;
  Watch d = watch(w, "memory.max");
  int err = 0;
  Watch again = w.add(FileIo::system(), fd_, dir_, "memory.max", err);
  EXPECT_FALSE(again.active());
  EXPECT_EQ(err, EEXIST) << "a second handle would share the first's descriptor and remove it when it went";
  Watch none = w.add(FileIo::system(), fd_, dir_, "memory.swap.max", err);
  EXPECT_FALSE(none.active());
  EXPECT_EQ(err, ENOENT);
  Watch moved = std::move(d);
  EXPECT_TRUE(moved.active());
  EXPECT_FALSE(d.active());
}

TEST_F(FileWatchTest, AFullQueueSaysEverythingMayHaveChanged) {
  std::ifstream limit("/proc/sys/fs/inotify/max_queued_events");
  long queued = 0;
  limit >> queued;
  if (queued <= 0 || queued > 100000) GTEST_SKIP() << "max_queued_events " << queued;
  WatchSet w;
  Watch max = watch(w, "memory.max"), high = watch(w, "memory.high");
  // Alternating files: identical events in a row are merged into one.
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

TEST_F(FileWatchTest, ARefusedWatchSaysWhy) {
  WatchSet w;
  RefusingIo io;
  int err = 0;
  Watch d = w.add(io, fd_, dir_, "memory.max", err);
  EXPECT_FALSE(d.active());
  EXPECT_EQ(err, ENOSPC);
}

}  // namespace
}  // namespace memcg::cgroupfs
