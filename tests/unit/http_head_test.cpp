// The gate's reading of request and response heads (exporter/http/head.h).
#include <gtest/gtest.h>

#include "exporter/http/head.h"
#include "exporter/http/workers.h"

namespace memcg::exporter {
namespace {

HeadCheck check(const std::string& in) { return check_request(in, 16384, 65536); }

TEST(HttpHead, ARequestEndsAtItsBlankLineAndItsBody) {
  EXPECT_EQ(check("GET /metrics HTTP/1.1\r\nHost: x\r\n").status, HeadCheck::Status::incomplete);
  auto c = check("\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n\r\n");
  ASSERT_EQ(c.status, HeadCheck::Status::ok);
  EXPECT_EQ(c.head.skipped, 2u);
  EXPECT_EQ(c.head.head_len, 34u);
  EXPECT_TRUE(c.head.keep_alive);
  c = check("POST /api/v1/refresh HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  ASSERT_EQ(c.status, HeadCheck::Status::ok);
  EXPECT_EQ(c.head.body_len, 5u);
  EXPECT_FALSE(c.head.keep_alive);
  EXPECT_EQ(c.head.total(), c.head.head_len + 5);
  EXPECT_FALSE(check("GET / HTTP/1.0\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(check("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(check("HEAD / HTTP/1.1\r\n\r\n").head.is_head);
}

TEST(HttpHead, RefusedHeadsCarryTheirStatus) {
  EXPECT_EQ(check("GET / HTTP/1.1\r\nX-A: b\r\n c\r\n\r\n").code, 400) << "folded with a space";
  EXPECT_EQ(check("GET / HTTP/1.1\r\nX-A: b\r\n\tc\r\n\r\n").code, 400) << "folded with a tab";
  EXPECT_EQ(check("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n").code, 400);
  EXPECT_EQ(check("POST / HTTP/1.1\r\nContent-Length: 0 46\r\n\r\n").code, 400);
  EXPECT_EQ(check("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").code, 411);
  EXPECT_EQ(check("POST / HTTP/1.1\r\nContent-Length: 70000\r\n\r\n").code, 413);
  EXPECT_EQ(check("GET / HTTP/1.1\r\nX: " + std::string(17000, 'a')).code, 431);
  EXPECT_NE(gate_response(400, "why").find("Connection: close\r\n"), std::string::npos);
}

// The request line and the field names are checked here, by the one parser
// in front, and refused without quoting what was sent.
TEST(HttpHead, MalformedRequestLinesAndFieldNamesAreRefusedWithoutEcho) {
  for (const char* bad : {"GET /metrics HTTP/1.1 junk\r\n\r\n", "GET  /metrics HTTP/1.1\r\n\r\n",
                          "GET /metrics\r\n\r\n", "G\x01T / HTTP/1.1\r\n\r\n", "GET /a\x7f HTTP/1.1\r\n\r\n",
                          "GET / HTTQ/1.1\r\n\r\n", "GET / HTTP/1.1\r\nNoColon\r\n\r\n",
                          "GET / HTTP/1.1\r\nX-A : b\r\n\r\n", "GET / HTTP/1.1\r\n: empty\r\n\r\n"}) {
    const auto c = check(bad);
    EXPECT_EQ(c.status, HeadCheck::Status::refused) << bad;
    EXPECT_EQ(c.code, 400) << bad;
    EXPECT_EQ(c.reason.find("junk"), std::string::npos);
    EXPECT_EQ(c.reason.find("NoColon"), std::string::npos);
  }
  EXPECT_EQ(check("GET / HTTP/2.0\r\n\r\n").code, 505);
  EXPECT_EQ(check("OPTIONS * HTTP/1.1\r\n\r\n").status, HeadCheck::Status::ok);
  EXPECT_EQ(check("GET /metrics?x=1 HTTP/1.1\r\nX-Custom_1: a:b\r\n\r\n").status, HeadCheck::Status::ok);
}

TEST(HttpHead, TheOneParseGivesTheWorkerTheRequestsParts) {
  const std::string in = "\r\nPOST /api/v1/refresh?cgroup=a%2Fb HTTP/1.1\r\nHost: x\r\nAccept-Encoding:  gzip \r\nX-Empty:\r\n"
                         "Content-Length: 2\r\n\r\nokGET /next HTTP/1.1\r\n";
  const HeadCheck c = check_request(in, 16384, 4096);
  ASSERT_EQ(c.status, HeadCheck::Status::ok);
  Job job{7, in.substr(c.head.skipped, c.head.head_len + c.head.body_len), c.head};
  std::vector<Header> fields;
  const Request req = request_of(job, fields);
  EXPECT_EQ(req.method, Method::post);
  EXPECT_EQ(req.path, "/api/v1/refresh");
  EXPECT_EQ(req.query, "cgroup=a%2Fb");
  ASSERT_EQ(req.headers.size(), 4u);
  EXPECT_EQ(req.header("accept-encoding"), "gzip") << "the value without its surrounding whitespace";
  EXPECT_EQ(req.header("X-Empty"), "");
  EXPECT_EQ(job.body(), "ok") << "the pipelined request after it is not part of it";
  const HeadCheck star = check_request("OPTIONS * HTTP/1.1\r\n\r\n", 16384, 4096);
  Job j2{1, "OPTIONS * HTTP/1.1\r\n\r\n", star.head};
  EXPECT_EQ(request_of(j2, fields).path, "*");
  EXPECT_EQ(request_of(j2, fields).method, Method::other);
}

}  // namespace
}  // namespace memcg::exporter
