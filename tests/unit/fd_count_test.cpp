// process_open_fds: the count from the kernel's size of /proc/self/fd, and
// the listing (kernels before 6.2) taken at most every FdCounter::kListEvery.
#include "exporter/exposition/fd_count.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "base/sys/unique_fd.h"

namespace memcg::exporter {
namespace {

using std::chrono::seconds;

std::vector<sys::UniqueFd> open_some(int n) {
  std::vector<sys::UniqueFd> fds;
  for (int i = 0; i < n; ++i) fds.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  return fds;
}

TEST(FdListing, DueFirstThenEveryInterval) {
  const TimePoint t0{seconds(100)};
  EXPECT_TRUE(fd_listing_due(std::nullopt, t0, seconds(30)));
  EXPECT_FALSE(fd_listing_due(t0, t0 + seconds(29), seconds(30)));
  EXPECT_TRUE(fd_listing_due(t0, t0 + seconds(30), seconds(30)));
  EXPECT_TRUE(fd_listing_due(t0, t0 - seconds(1), seconds(30)));  // never stuck behind a clock that went back
}

// /proc/self/fdinfo has an entry per descriptor and a size of 0 on every
// kernel: the listing path, whatever kernel runs the test.
TEST(FdCounter, ListsWhenTheKernelGivesNoSizeAndServesTheCountBetween) {
  ManualClock clock;
  FdCounter counter(clock, "/proc/self/fdinfo");
  const auto before = counter.count();
  ASSERT_TRUE(before);
  EXPECT_FALSE(counter.sized());
  auto more = open_some(10);
  EXPECT_EQ(counter.count(), before) << "listed again before kListEvery";
  clock.advance(FdCounter::kListEvery);
  EXPECT_EQ(counter.count(), *before + 10);
  more.clear();
  clock.advance(FdCounter::kListEvery);
  EXPECT_EQ(counter.count(), before);
}

// The process's real count, by whichever way this kernel allows: equal to
// what a listing finds, and following descriptors opened and closed at once
// where the kernel gives the size.
TEST(FdCounter, CountsThisProcess) {
  ManualClock clock;
  FdCounter counter(clock);
  FdCounter listing(clock, "/proc/self/fdinfo");
  const auto n = counter.count();
  ASSERT_TRUE(n);
  EXPECT_EQ(n, listing.count());
  if (!counter.sized()) GTEST_SKIP() << "this kernel gives no size for /proc/self/fd (before 6.2): listed";
  auto more = open_some(5);
  EXPECT_EQ(counter.count(), *n + 5) << "a sized count is taken fresh at every scrape";
}

TEST(FdCounter, UnreadableDirectoryIsNoCount) {
  ManualClock clock;
  FdCounter counter(clock, "/nonexistent/fd");
  EXPECT_FALSE(counter.count());
}

}  // namespace
}  // namespace memcg::exporter
