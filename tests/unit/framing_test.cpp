// Request heads RFC 9112 says to reject (exporter/http/framing.h).
#include "exporter/http/framing.h"

#include <gtest/gtest.h>

#include <vector>

namespace memcg::exporter {
namespace {

std::optional<std::string> check(std::vector<HeaderField> f) { return framing_error(f); }

TEST(Framing, AmbiguousHeadsAreRejected) {
  EXPECT_FALSE(check({{"Host", "a"}, {"Content-Length", "12"}}));
  EXPECT_FALSE(check({{"Host", "a"}, {"Transfer-Encoding", "chunked"}}));
  EXPECT_FALSE(check({{"content-length", " 0 "}}));
  EXPECT_EQ(check({{"Content-Length", "4"}, {"transfer-encoding", "chunked"}}), "both Content-Length and Transfer-Encoding");
  EXPECT_EQ(check({{"Content-Length", "0"}, {"Content-Length", "0"}}), "Content-Length repeated");
  for (const char* v : {"0 46", "", "-1", "+5", "1e3", "0x10", "99999999999999999999"})
    EXPECT_EQ(check({{"Content-Length", v}}), "malformed Content-Length") << v;
  EXPECT_TRUE(check({{"X A", "b"}}));
  EXPECT_TRUE(check({{"", "b"}}));
  EXPECT_TRUE(check({{"X-A", "b\r\n c"}}));
}

}  // namespace
}  // namespace memcg::exporter
