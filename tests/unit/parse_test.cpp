#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>

#include "base/parse/digits.h"
#include "base/parse/event_keys.h"
#include "base/parse/flat_keyed.h"
#include "base/parse/number.h"
#include "base/parse/psi.h"
#include "base/parse/single_value.h"
#include "base/parse/stat_keys.h"
#include "base/text/buffer.h"
#include "base/text/digest.h"
#include "base/text/short_bytes.h"
#include "tests/fixtures/tree.h"
#include "tests/unit/alloc_counter.h"

namespace memcg::parse {
namespace {

size_t idx(std::string_view key) { return *stat_key_table().find(key); }

TEST(StatParse, RealKernelBodyParsesEveryLine) {
  const std::string body = fixtures::kernel_file("work_hog", "memory.stat");
  StatValues v;
  LayoutCache layout;
  auto r = parse_flat_keyed(body, stat_key_table(), layout, v.out());
  EXPECT_EQ(r.malformed, 0u);
  EXPECT_EQ(r.lines, 47u);  // what Linux 6.1 prints for a non-root cgroup
  EXPECT_TRUE(v.unknown.empty()) << "a 6.1 key is missing from the table: " << v.unknown.front().name;
  EXPECT_EQ(v.get(idx("anon")), 58822656u);
  EXPECT_EQ(v.get(idx("shmem")), 20971520u);
  EXPECT_EQ(v.get(idx("pgfault")), 8209u);
  EXPECT_EQ(v.get(idx("thp_fault_alloc")), 165u);
  EXPECT_FALSE(v.get(idx("zswap")).has_value()) << "6.1 has no zswap line";
}

TEST(StatParse, EverySixTwelveKeyIsKnownAndClassified) {
  // Debian 13's 6.12 (tests/fixtures/kernel-6.12, run-stage1.sh FIXTURES_OUT)
  // prints keys 6.1 did not: sec_pagetables, pgdemote_*, pgpromote_success,
  // pgscan/pgsteal_khugepaged, swpin_zero, swpout_zero.
  for (const char* dir : {"work", "work_hog", "work_oom", "work_high", "root"}) {
    const std::string body = fixtures::kernel_file(dir, "memory.stat", "6.12");
    StatValues v;
    LayoutCache layout;
    const auto r = parse_flat_keyed(body, stat_key_table(), layout, v.out());
    EXPECT_EQ(r.malformed, 0u) << dir;
    EXPECT_TRUE(v.unknown.empty()) << dir << ": a 6.12 key is missing from the table: " << v.unknown.front().name;
    EXPECT_GE(r.lines, 60u) << dir;
  }
  const std::string body = fixtures::kernel_file("work_hog", "memory.stat", "6.12");
  StatValues v;
  LayoutCache layout;
  parse_flat_keyed(body, stat_key_table(), layout, v.out());
  for (const char* k : {"sec_pagetables", "swpin_zero", "pgdemote_khugepaged", "pgpromote_success"})
    EXPECT_TRUE(v.get(idx(k)).has_value()) << k;
  EXPECT_EQ(stat_kind(idx("sec_pagetables")), StatKind::bytes);
  EXPECT_EQ(stat_kind(idx("swpin_zero")), StatKind::events);
  EXPECT_EQ(stat_kind(idx("pgdemote_khugepaged")), StatKind::events);
  EXPECT_EQ(stat_kind(idx("zswap")), StatKind::bytes);
  EXPECT_EQ(stat_kind(idx("hugetlb")), StatKind::bytes);
}

TEST(EventsParse, SixTwelveEventFilesParse) {
  LayoutCache layout;
  EventValues v;
  auto r = parse_flat_keyed(fixtures::kernel_file("work_oom", "memory.events", "6.12"), event_key_table(), layout, v.out());
  EXPECT_EQ(r.malformed, 0u);
  EXPECT_TRUE(v.unknown.empty());
  EXPECT_GT(v.get(ev_oom_kill).value_or(0), 0u) << "the fixture's cgroup was OOM-killed";
  LayoutCache swap_layout;
  SwapEventValues sw;
  r = parse_flat_keyed(fixtures::kernel_file("work_oom", "memory.swap.events", "6.12"), swap_event_key_table(), swap_layout, sw.out());
  EXPECT_EQ(r.malformed, 0u);
  EXPECT_TRUE(sw.unknown.empty());
}

TEST(StatParse, KeysAreClassifiedByKind) {
  EXPECT_EQ(stat_kind(idx("anon")), StatKind::bytes);
  EXPECT_EQ(stat_kind(idx("slab")), StatKind::bytes);
  EXPECT_EQ(stat_kind(idx("file_writeback")), StatKind::bytes);
  EXPECT_EQ(stat_kind(idx("pgfault")), StatKind::events);
  EXPECT_EQ(stat_kind(idx("workingset_refault_file")), StatKind::events);
  EXPECT_EQ(stat_kind(idx("thp_fault_alloc")), StatKind::events);
  EXPECT_EQ(stat_kind(idx("pgscan_kswapd")), StatKind::events);
  // Every key of the table has a name and a kind; the counts add up.
  size_t bytes = 0, events = 0;
  for (const auto& k : stat_keys()) (k.kind == StatKind::bytes ? bytes : events)++;
  EXPECT_EQ(bytes + events, kStatKeyCount);
  EXPECT_EQ(bytes, 28u);
}

TEST(StatParse, UnknownKeysAreKeptInOrder) {
  StatValues v;
  LayoutCache layout;
  auto r = parse_flat_keyed("anon 1\nfuture_key 7\nfile 2\nanother_new 9\n", stat_key_table(), layout, v.out());
  EXPECT_EQ(r.malformed, 0u);
  ASSERT_EQ(v.unknown.size(), 2u);
  EXPECT_EQ(v.unknown[0].name, "future_key");
  EXPECT_EQ(v.unknown[0].value, 7u);
  EXPECT_EQ(v.unknown[1].name, "another_new");
  EXPECT_EQ(v.get(idx("file")), 2u);
}

TEST(StatParse, MalformedLinesAreCountedAndSkipped) {
  StatValues v;
  LayoutCache layout;
  const std::string text =
      "anon 100\n"
      "file\n"                      // no value
      "kernel -5\n"                 // negative
      "sock 12abc\n"                // junk
      " 55\n"                       // no key
      "shmem 18446744073709551616\n"  // 2^64: overflow
      "anon 200\n"                  // duplicate: first wins
      "pgfault 18446744073709551615\n"  // 2^64-1 is fine
      "\n"
      "pgmajfault 3";               // no trailing newline
  auto r = parse_flat_keyed(text, stat_key_table(), layout, v.out());
  EXPECT_EQ(r.malformed, 6u);
  EXPECT_EQ(v.get(idx("anon")), 100u);
  EXPECT_FALSE(v.get(idx("file")).has_value());
  EXPECT_FALSE(v.get(idx("shmem")).has_value());
  EXPECT_EQ(v.get(idx("pgfault")), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(v.get(idx("pgmajfault")), 3u);
}

TEST(StatParse, GarbageNeverCrashes) {
  StatValues v;
  LayoutCache layout;
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(static_cast<char>((i * 7919) % 256));
  auto r = parse_flat_keyed(junk, stat_key_table(), layout, v.out());
  EXPECT_GT(r.malformed, 0u);
}

TEST(StatParse, ReparseOfSameLayoutAllocatesNothing) {
  const std::string body = fixtures::kernel_file("work_hog", "memory.stat") + "brand_new_key 5\n";
  StatValues v;
  LayoutCache layout;
  parse_flat_keyed(body, stat_key_table(), layout, v.out());  // warm-up learns the layout
  testing::AllocationCounter allocs;
  for (int i = 0; i < 100; ++i) parse_flat_keyed(body, stat_key_table(), layout, v.out());
  EXPECT_EQ(allocs.count(), 0u);
  EXPECT_EQ(v.unknown.size(), 1u);
}

// A layout learnt from earlier reads takes the one-scan path for lines that
// hold the key they held before; whatever a line holds, the result must be
// what a parser that never saw the file makes of it. Mutations of a real
// body: digits added (a 20th, a 21st), junk after a value, keys lengthened
// or cut, lines dropped, duplicated, emptied or swapped, the body cut off.
TEST(StatParse, ALearntLayoutParsesEveryMutationAsAFreshParserDoes) {
  const std::string body = fixtures::kernel_file("work_hog", "memory.stat");
  uint64_t seed = 0x9e3779b97f4a7c15u;
  const auto rnd = [&](size_t n) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    return static_cast<size_t>(seed % n);
  };
  const std::string edits[] = {"9", "99999999999", " ", "x", "\n", "_thp", "", "-", "\n\n", "18446744073709551615"};
  StatValues warm_v;
  LayoutCache warm;
  parse_flat_keyed(body, stat_key_table(), warm, warm_v.out());
  for (int round = 0; round < 3000; ++round) {
    std::string text = body;
    for (int e = 1 + static_cast<int>(rnd(3)); e > 0; --e) {
      const size_t at = rnd(text.size() + 1);
      switch (rnd(4)) {
        case 0: text.insert(at, edits[rnd(std::size(edits))]); break;
        case 1: text.erase(at, rnd(12)); break;
        case 2: text.resize(at); break;
        default: {  // a whole line repeated elsewhere
          const size_t from = text.rfind('\n', at), to = text.find('\n', at);
          const size_t b = from == std::string::npos ? 0 : from + 1;
          text.insert(rnd(text.size() + 1), text.substr(b, (to == std::string::npos ? text.size() : to + 1) - b));
        }
      }
    }
    LayoutCache learnt = warm;  // every round starts from the layout of the real body
    StatValues a, b;
    LayoutCache fresh;
    const ParseResult ra = parse_flat_keyed(text, stat_key_table(), learnt, a.out());
    const ParseResult rb = parse_flat_keyed(text, stat_key_table(), fresh, b.out());
    ASSERT_EQ(ra.lines, rb.lines) << text;
    ASSERT_EQ(ra.malformed, rb.malformed) << text;
    ASSERT_EQ(a, b) << text;
    // ...and it leaves the layout a fresh parser learns, for the next read.
    StatValues c;
    parse_flat_keyed(text, stat_key_table(), learnt, c.out());
    ASSERT_EQ(c, b) << text;
  }
}

// The word-at-a-time digit run reads what a byte loop reads, for any bytes
// (digits, separators, bytes with the high bit set, next to '0' and '9'),
// at every length and offset, and never past `avail`.
TEST(DigitRun, AgreesWithAByteLoopOnAnyBytes) {
  const auto reference = [](const char* p, size_t avail) {
    DigitRun r;
    for (; r.len < avail && r.len < DigitRun::kMax && p[r.len] >= '0' && p[r.len] <= '9'; ++r.len)
      r.value = r.value * 10 + static_cast<uint64_t>(p[r.len] - '0');
    return r;
  };
  const char alphabet[] = {'0', '1', '5', '8', '9', '/', ':', ' ', '\n', '\0', '\x7f', '\x80', '\xb9', '\xff', 'a', '\xf9'};
  std::mt19937 rng(11);
  char buf[48];
  for (int k = 0; k < 200000; ++k) {
    const size_t avail = rng() % 32;
    const int digit_bias = static_cast<int>(rng() % 4);  // from mostly digits to mostly not
    for (size_t i = 0; i < sizeof buf; ++i)
      buf[i] = static_cast<int>(rng() % 4) < digit_bias ? static_cast<char>('0' + rng() % 10) : alphabet[rng() % sizeof alphabet];
    const size_t offset = rng() % 8;
    // Bytes past avail are digits: a run read past its end would show.
    for (size_t i = offset + avail; i < sizeof buf; ++i) buf[i] = '7';
    const DigitRun got = parse::digit_run(buf + offset, avail);
    const DigitRun want = reference(buf + offset, avail);
    ASSERT_EQ(got.len, want.len) << std::string(buf + offset, avail);
    ASSERT_EQ(got.value, want.value) << std::string(buf + offset, avail);
  }
  const std::string max(19, '9');
  EXPECT_EQ(parse::digit_run(max.data(), max.size()).value, 9999999999999999999ULL);
  const std::string twenty = max + "9\n";
  EXPECT_EQ(parse::digit_run(twenty.data(), twenty.size()).len, DigitRun::kMax);
}

// The inline copy and comparison agree with memcpy and memcmp at every
// length a key, a label or a line has, and touch no byte past n.
TEST(ShortBytes, CopyAndCompareAgreeWithTheLibraryAtEveryLength) {
  char src[160], dst[176];
  for (size_t i = 0; i < sizeof src; ++i) src[i] = static_cast<char>('a' + i % 26);
  for (size_t n = 0; n <= 128; ++n) {
    std::memset(dst, '#', sizeof dst);
    text::copy_short(dst + 1, src + 3, n);
    ASSERT_EQ(std::memcmp(dst + 1, src + 3, n), 0) << n;
    ASSERT_EQ(dst[0], '#') << n;
    ASSERT_EQ(dst[n + 1], '#') << n;
    ASSERT_TRUE(text::same_bytes(dst + 1, src + 3, n)) << n;
    for (size_t at = 0; at < n; ++at) {  // one byte different anywhere
      dst[1 + at] ^= 1;
      ASSERT_FALSE(text::same_bytes(dst + 1, src + 3, n)) << n << " at " << at;
      dst[1 + at] ^= 1;
    }
  }
}

// The digest that spares an unchanged memory.stat its parse: the same bytes
// in another buffer digest alike; any one byte changed anywhere (every bit of
// it, one at a time), the text cut or grown by a zero byte at any length, or
// another key, digest differently.
TEST(Digest, SameBytesAlikeAndAnyChangeOrLengthDifferent) {
  std::string text;
  for (uint64_t i = 0; i < 60; ++i) text += "key_" + std::to_string(i) + " " + std::to_string(1000003 * i) + "\n";
  const text::DigestKey key;  // the fixed key (a process draws its own)
  const std::string copy = text;
  const uint64_t d = text::digest(text, key);
  EXPECT_EQ(text::digest(copy, key), d);
  EXPECT_NE(text::digest(text, text::DigestKey{0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9, 0x94d049bb133111eb}), d);
  std::set<uint64_t> seen{d};
  std::string t = text;
  for (size_t at = 0; at < t.size(); ++at)
    for (int bit = 0; bit < 8; ++bit) {
      t[at] = static_cast<char>(t[at] ^ (1 << bit));
      ASSERT_TRUE(seen.insert(text::digest(t, key)).second) << at << " bit " << bit;
      t[at] = text[at];
    }
  for (size_t n = 0; n < text.size(); ++n) {  // every length, short texts included
    const std::string_view cut(text.data(), n);
    ASSERT_TRUE(seen.insert(text::digest(cut, key)).second) << n;
    ASSERT_TRUE(seen.insert(text::digest(std::string(cut) + '\0', key)).second) << n;
  }
}

// The exposition's buffer keeps every byte written through its growth (2 MB
// from empty: five doublings), keeps its capacity when cleared, so a scrape
// after the first grows nothing, and frees it when released.
TEST(TextBuffer, KeepsWhatWasWrittenThroughGrowthAndItsCapacityWhenCleared) {
  text::Buffer b;
  std::string expect;
  for (int line = 0; expect.size() < (2u << 20); ++line) {
    const std::string s = "memcg_memory_current_bytes{cgroup_id=\"" + std::to_string(line) + "\"} 123\n";
    if (line % 2) {
      b.append(s);
    } else {  // composed in place, as a value line is
      char* at = b.room(512);
      std::memcpy(at, s.data(), s.size());
      b.commit(s.size());
    }
    expect += s;
  }
  ASSERT_EQ(b.view(), expect);
  const size_t cap = b.capacity();
  EXPECT_GE(cap, expect.size());
  b.clear();
  EXPECT_EQ(b.size(), 0u);
  b.append(expect);
  EXPECT_EQ(b.capacity(), cap);
  text::Buffer moved(std::move(b));
  EXPECT_EQ(moved.view(), expect);
  EXPECT_EQ(b.size(), 0u);
  moved.release();
  EXPECT_EQ(moved.capacity(), 0u);
  moved.append("again");
  EXPECT_EQ(moved.view(), "again");
}

TEST(StatParse, KeysAbsentFromANewReadAreCleared) {
  StatValues v;
  LayoutCache layout;
  parse_flat_keyed("anon 1\nfile 2\nnewkey 3\n", stat_key_table(), layout, v.out());
  parse_flat_keyed("anon 5\n", stat_key_table(), layout, v.out());
  EXPECT_EQ(v.get(idx("anon")), 5u);
  EXPECT_FALSE(v.get(idx("file")).has_value());
  EXPECT_TRUE(v.unknown.empty());
}

TEST(StatParse, LayoutChangeStillFindsEveryKey) {
  StatValues v;
  LayoutCache layout;
  parse_flat_keyed("anon 1\nfile 2\nkernel 3\n", stat_key_table(), layout, v.out());
  // A newer kernel inserts a key in the middle: later lines shift.
  auto r = parse_flat_keyed("anon 1\nzswap 9\nfile 2\nkernel 3\n", stat_key_table(), layout, v.out());
  EXPECT_EQ(r.malformed, 0u);
  EXPECT_EQ(v.get(idx("zswap")), 9u);
  EXPECT_EQ(v.get(idx("file")), 2u);
  EXPECT_EQ(v.get(idx("kernel")), 3u);
}

TEST(EventsParse, RealKernelOomCgroup) {
  EventValues v;
  LayoutCache layout;
  auto r = parse_flat_keyed(fixtures::kernel_file("work_oom", "memory.events"), event_key_table(), layout, v.out());
  EXPECT_EQ(r.malformed, 0u);
  EXPECT_EQ(v.get(ev_max), 35u);
  EXPECT_EQ(v.get(ev_oom), 1u);
  EXPECT_EQ(v.get(ev_oom_kill), 1u);
  EXPECT_EQ(v.get(ev_oom_group_kill), 0u);
}

TEST(PsiParse, RealKernelPressure) {
  Psi p;
  EXPECT_EQ(parse_psi(fixtures::kernel_file("work", "memory.pressure"), p), 0u);
  ASSERT_TRUE(p.some.present);
  ASSERT_TRUE(p.full.present);
  EXPECT_DOUBLE_EQ(p.some.avg10, 9.96);
  EXPECT_DOUBLE_EQ(p.some.avg300, 0.37);
  EXPECT_EQ(p.some.total_us, 1174586u);
  EXPECT_EQ(p.full.total_us, 1100939u);
}

TEST(PsiParse, OnlySomeLineAndMalformedLines) {
  Psi p;
  // Kernels before 5.x printed no "full" line for some resources; fields may be added later.
  EXPECT_EQ(parse_psi("some avg10=1.50 avg60=0.00 avg300=0.00 total=42 extra=1\n", p), 0u);
  EXPECT_TRUE(p.some.present);
  EXPECT_FALSE(p.full.present);
  EXPECT_EQ(p.some.total_us, 42u);
  EXPECT_EQ(parse_psi("some avg10=x avg60=0 avg300=0 total=1\nfull total=5\nbogus line\n", p), 3u);
  EXPECT_FALSE(p.some.present);
  EXPECT_FALSE(p.full.present);
  // Shares of time are 0..100: a negative or non-finite one is malformed (found by fuzzing).
  for (const char* bad : {"some avg10=9.96 avg60=1.79 avg300=-0.37 total=1\n", "some avg10=-0 avg60=0 avg300=0 total=1\n",
                          "some avg10=inf avg60=0 avg300=0 total=1\n", "some avg10=nan avg60=0 avg300=0 total=1\n",
                          "some avg10=100.01 avg60=0 avg300=0 total=1\n"}) {
    EXPECT_EQ(parse_psi(bad, p), 1u) << bad;
    EXPECT_FALSE(p.some.present) << bad;
  }
  EXPECT_EQ(parse_psi("some avg10=100.00 avg60=0.00 avg300=0.00 total=1\n", p), 0u);
}

// The kernel's "%lu.%02lu" averages are read digit by digit: each of them,
// 0.00 to 100.00, to the very double from_chars gives; other spellings as
// before.
TEST(PsiParse, KernelAveragesReadAsFromCharsReadsThem) {
  Psi p;
  for (int h = 0; h <= 10000; ++h) {
    char avg[16];
    std::snprintf(avg, sizeof avg, "%d.%02d", h / 100, h % 100);
    const std::string line = std::string("some avg10=") + avg + " avg60=0.00 avg300=0.00 total=7\n";
    ASSERT_EQ(parse_psi(line, p), 0u) << avg;
    double want = -1;
    std::from_chars(avg, avg + std::strlen(avg), want, std::chars_format::fixed);
    ASSERT_EQ(p.some.avg10, want) << avg;  // bit for bit, not nearly
  }
  // Not the kernel's form: parsed as any fixed-point number was.
  EXPECT_EQ(parse_psi("some avg10=1.5 avg60=007.25 avg300=12 total=1\n", p), 0u);
  EXPECT_DOUBLE_EQ(p.some.avg10, 1.5);
  EXPECT_DOUBLE_EQ(p.some.avg60, 7.25);
  EXPECT_DOUBLE_EQ(p.some.avg300, 12);
  for (const char* bad : {"some avg10=1.x5 avg60=0 avg300=0 total=1\n", "some avg10=+1.00 avg60=0 avg300=0 total=1\n",
                          "some avg10=1000.00 avg60=0 avg300=0 total=1\n"}) {
    EXPECT_EQ(parse_psi(bad, p), 1u) << bad;
    EXPECT_FALSE(p.some.present) << bad;
  }
}

TEST(SingleValue, NumbersMaxAndJunk) {
  EXPECT_EQ(parse_single_value("4096\n"), (SingleValue{4096, false}));
  EXPECT_EQ(parse_single_value("max\n"), (SingleValue{0, true}));
  EXPECT_EQ(parse_single_value("18446744073709551615\n"), (SingleValue{std::numeric_limits<uint64_t>::max(), false}));
  EXPECT_FALSE(parse_single_value("18446744073709551616\n"));
  EXPECT_FALSE(parse_single_value(""));
  EXPECT_FALSE(parse_single_value("\n"));
  EXPECT_FALSE(parse_single_value("12 34\n"));
  EXPECT_FALSE(parse_single_value("-1\n"));
  EXPECT_FALSE(parse_single_value("max\n\n"));
}

TEST(NumberParse, UnsignedDecimalsUpToUint64MaxAndNothingElse) {
  EXPECT_EQ(parse_u64("0"), 0u);
  EXPECT_EQ(parse_u64("123456789"), 123456789u);
  EXPECT_EQ(parse_u64("1844674407370955161"), 1844674407370955161u) << "19 digits: no overflow possible";
  EXPECT_EQ(parse_u64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_u64("00000000000000000001"), 1u);
  for (const char* bad : {"", "18446744073709551616", "99999999999999999999", "184467440737095516150", "+1", "-1", "1a",
                          "a1", " 1", "1 ", "1.5", "max", "000000000000000000001"})
    EXPECT_EQ(parse_u64(bad), std::nullopt) << '"' << bad << '"';
}

TEST(HasField, WholeFieldsOnly) {
  EXPECT_TRUE(has_field("cpu io memory pids\n", " \n", "memory"));
  EXPECT_TRUE(has_field("memory\n", " \n", "memory"));
  EXPECT_FALSE(has_field("cpu io pids\n", " \n", "memory"));
  EXPECT_FALSE(has_field("memoryx io\n", " \n", "memory")) << "a longer field that starts the same";
  EXPECT_FALSE(has_field("", " \n", "memory"));
  EXPECT_TRUE(has_field("/../x", "/", ".."));
  EXPECT_TRUE(has_field("/a/..", "/", ".."));
  EXPECT_FALSE(has_field("/a/..b/c", "/", ".."));
}

}  // namespace
}  // namespace memcg::parse
