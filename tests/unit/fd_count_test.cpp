// process_open_fds: the count from the kernel's size of /proc/self/fd, from
// a poll over the descriptor table where the kernel gives none (before 6.2),
// and the listing (the fallback) taken at most every FdCounter::kListEvery.
#include "exporter/exposition/fd_count.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "base/sys/open_descriptors.h"
#include "base/sys/read_file.h"
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
  EXPECT_EQ(counter.method(), FdCounter::Method::listed);
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
  EXPECT_NE(counter.method(), FdCounter::Method::listed) << "this process is counted by size or by poll, never listed";
  if (counter.method() != FdCounter::Method::sized) GTEST_SKIP() << "this kernel gives no size for /proc/self/fd (before 6.2): polled";
  auto more = open_some(5);
  EXPECT_EQ(counter.count(), *n + 5) << "a sized count is taken fresh at every scrape";
}

// What a kernel before 6.2 does: /proc/self/fdinfo gives no size, as
// /proc/self/fd does not there, and the poll counts this process, at most
// every kListEvery.
TEST(FdCounter, PollsThisProcessWhenTheKernelGivesNoSize) {
  ManualClock clock;
  FdCounter polled(clock, "/proc/self/fdinfo", /*own=*/true);
  FdCounter listing(clock, "/proc/self/fdinfo");
  const auto n = polled.count();
  ASSERT_TRUE(n);
  EXPECT_EQ(polled.method(), FdCounter::Method::polled);
  EXPECT_EQ(n, listing.count());
  auto more = open_some(7);
  EXPECT_EQ(polled.count(), n) << "counted again before kListEvery";
  clock.advance(FdCounter::kListEvery);
  EXPECT_EQ(polled.count(), *n + 7);
  more.clear();
  clock.advance(FdCounter::kListEvery);
  EXPECT_EQ(polled.count(), n);
}

TEST(OpenDescriptors, TableSizeFromProcStatus) {
  EXPECT_EQ(sys::fd_table_size("Name:\tx\nFDSize:\t256\nGroups:\t\n"), 256u);
  EXPECT_EQ(sys::fd_table_size("Name:\tx\nGroups:\t\n"), 0u);
  EXPECT_EQ(sys::fd_table_size("Name:\tx\nFDSize:\tmany\n"), 0u);
  const auto status = sys::read_file("/proc/self/status");
  ASSERT_TRUE(status.ok());
  EXPECT_GE(sys::fd_table_size(status.value()), 64u);  // the kernel's smallest table
}

// Slots above the table hold nothing; a closed slot in the middle is not
// counted (POLLNVAL), nor is a negative one.
TEST(OpenDescriptors, CountsOpenSlotsOnly) {
  std::vector<pollfd> slots;
  const auto status = sys::read_file("/proc/self/status");
  ASSERT_TRUE(status.ok());
  const size_t table = sys::fd_table_size(status.value());
  const auto before = sys::count_open_descriptors(table, slots);
  ASSERT_TRUE(before.ok());
  auto more = open_some(3);
  const int hole = more[1].get();
  more[1].reset();
  const auto after = sys::count_open_descriptors(table, slots);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after.value(), before.value() + 2);
  EXPECT_EQ(slots[static_cast<size_t>(hole)].revents & POLLNVAL, POLLNVAL);
}

TEST(FdCounter, UnreadableDirectoryIsNoCount) {
  ManualClock clock;
  FdCounter counter(clock, "/nonexistent/fd");
  EXPECT_FALSE(counter.count());
}

}  // namespace
}  // namespace memcg::exporter
