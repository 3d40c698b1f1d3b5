// The collector thread's scheduler slice: the decision (pass_slice.h) over
// passes it is shown, and the request itself on this host's kernel.
#include "exporter/pass_slice.h"

#include <sys/utsname.h>

#include <cstdio>
#include <thread>

#include <gtest/gtest.h>

#include "base/sys/sched_slice.h"

namespace memcg::exporter {
namespace {

using namespace std::chrono_literals;

// Feeds `n` passes of `cpu` each; the last request made, if any.
std::optional<Duration> feed(PassSlice& s, size_t n, Duration cpu) {
  std::optional<Duration> last;
  for (size_t i = 0; i < n; ++i)
    if (auto r = s.observe(cpu)) last = r;
  return last;
}

TEST(PassSlice, AsksForThePassesNinetyFifthPercentileAfterTheFirstPasses) {
  PassSlice s;
  for (size_t i = 1; i < PassSlice::kFirst; ++i) EXPECT_FALSE(s.observe(3ms)) << "pass " << i;
  const auto first = s.observe(3ms);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, 3ms);
  EXPECT_EQ(s.asked(), 3ms);
}

TEST(PassSlice, ARescanNowAndThenDoesNotSetTheSlice) {
  PassSlice s;
  // 64 passes, three of them a rescan five times as long: the 95th
  // percentile (the 61st of 64) is still an ordinary pass.
  for (size_t i = 0; i < PassSlice::kWindow; ++i) (void)s.observe(i % 21 == 20 ? 10ms : 2ms);
  EXPECT_EQ(s.asked(), 2ms);
  // A fourth in the window reaches the percentile.
  PassSlice t;
  for (size_t i = 0; i < PassSlice::kWindow; ++i) (void)t.observe(i % 16 == 15 ? 10ms : 2ms);
  EXPECT_EQ(t.asked(), 10ms);
}

TEST(PassSlice, ChangesOnlyWhenThePassesLeaveTheBandAndOnlyAtALook) {
  PassSlice s;
  ASSERT_EQ(feed(s, PassSlice::kFirst, 10ms), 10ms);
  // Within [0.8, 1.25] of what was asked: never asked again.
  EXPECT_FALSE(feed(s, 4 * PassSlice::kWindow, 12ms));
  EXPECT_FALSE(feed(s, 4 * PassSlice::kWindow, 8500us));
  EXPECT_EQ(s.asked(), 10ms);
  // Passes twice as long: asked at a look (every kEvery passes), once the
  // percentile moved, and not again while they stay there.
  size_t asks = 0;
  for (size_t i = 0; i < 4 * PassSlice::kWindow; ++i) {
    const auto r = s.observe(20ms);
    if (!r) continue;
    ++asks;
    EXPECT_EQ((i + 1) % PassSlice::kEvery, 0u) << "at a look, pass " << i;
  }
  EXPECT_EQ(asks, 1u);
  EXPECT_EQ(s.asked(), 20ms);
}

TEST(PassSlice, StaysWithinWhatTheKernelTakes) {
  PassSlice tiny, huge;
  EXPECT_EQ(feed(tiny, PassSlice::kFirst, 5us), PassSlice::kMin);
  EXPECT_EQ(feed(huge, PassSlice::kFirst, 3s), PassSlice::kMax);
}

// The kernel's major and minor version.
std::pair<int, int> kernel_version() {
  utsname u{};
  int major = 0, minor = 0;
  if (uname(&u) == 0) std::sscanf(u.release, "%d.%d", &major, &minor);
  return {major, minor};
}

TEST(SchedSlice, TheKernelKeepsTheRequestFrom612AndIgnoresItBefore) {
  // On a thread of its own: the request stays with the thread.
  std::thread([] {
    const auto kept = sys::request_thread_slice(7ms);
    ASSERT_TRUE(kept.ok()) << kept.message();
    if (kernel_version() >= std::pair{6, 12}) {
      EXPECT_EQ(kept.value(), 7ms);
      const auto clamped = sys::request_thread_slice(1s);
      ASSERT_TRUE(clamped.ok()) << clamped.message();
      EXPECT_EQ(clamped.value(), 100ms) << "the kernel's clamp";
      const auto reset = sys::request_thread_slice(0ms);
      ASSERT_TRUE(reset.ok()) << reset.message();
      EXPECT_NE(reset.value(), 100ms) << "back to the default slice";
    } else {
      EXPECT_EQ(kept.value(), 0ms);
    }
  }).join();
}

}  // namespace
}  // namespace memcg::exporter
