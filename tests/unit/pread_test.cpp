// pread(2) made as the system call itself (base/sys/pread.h): the contract
// of pread(2), which the probe's reads and their error reports rely on.
#include "base/sys/pread.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace memcg::sys {
namespace {

class PreadDirect : public ::testing::Test {
 protected:
  PreadDirect() {
    char tmpl[] = "/tmp/memcg-pread-XXXXXX";
    fd_ = ::mkstemp(tmpl);
    path_ = tmpl;
    EXPECT_EQ(::write(fd_, "123456789\n", 10), 10);
  }
  ~PreadDirect() override {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  int fd_ = -1;
  std::string path_;
};

TEST_F(PreadDirect, ReadsAtTheOffsetAsPreadDoes) {
  char a[32] = {}, b[32] = {};
  EXPECT_EQ(pread_direct(fd_, a, sizeof a, 0), ::pread(fd_, b, sizeof b, 0));
  EXPECT_EQ(std::string(a), "123456789\n");
  EXPECT_EQ(pread_direct(fd_, a, 4, 3), 4);
  EXPECT_EQ(std::string(a, 4), "4567");
  EXPECT_EQ(pread_direct(fd_, a, sizeof a, 10), 0) << "at the end: 0 bytes, not an error";
  EXPECT_EQ(::lseek(fd_, 0, SEEK_CUR), 10) << "the file position is left alone";
}

TEST_F(PreadDirect, FailsWithMinusOneAndErrnoAsPreadDoes) {
  char buf[8];
  errno = 0;
  EXPECT_EQ(pread_direct(-1, buf, sizeof buf, 0), -1);
  EXPECT_EQ(errno, EBADF);
  const int dir = ::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  errno = 0;
  EXPECT_EQ(pread_direct(dir, buf, sizeof buf, 0), -1);
  EXPECT_EQ(errno, EISDIR);
  ::close(dir);
  errno = 0;
  EXPECT_EQ(pread_direct(fd_, buf, sizeof buf, -1), -1);
  EXPECT_EQ(errno, EINVAL) << "a negative offset";
}

}  // namespace
}  // namespace memcg::sys
