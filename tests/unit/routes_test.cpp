// The HTTP endpoints as functions of a Request, without sockets: /metrics'
// body cache and gzip negotiation, HEAD, 404 and 405, basic auth, the
// refresh API's limits, and the response head the server writes.
#include <gtest/gtest.h>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "exporter/http/basic_auth.h"
#include "exporter/http/request.h"
#include "exporter/http/response.h"
#include "exporter/http/routes.h"
#include "exporter/http/web_backend.h"
#include "tests/unit/http_helpers.h"

namespace memcg::exporter {
namespace {

using testing::bcrypt_hash;
using testing::gunzip;

class FakeBackend final : public WebBackend {
 public:
  FakeBackend() { publish(1, 3); }
  void publish(uint64_t pass, size_t cgroups) {
    auto snap = std::make_shared<Snapshot>();
    snap->pass = snap->publication = pass;
    auto settings = std::make_shared<config::Settings>();
    for (size_t i = 0; i < cgroups; ++i)
      snap->add_cgroup(std::make_shared<CgroupId>(CgroupId{"svc/c" + std::to_string(i), i + 2, 1, {}}), settings);
    snap_ = std::move(snap);
  }
  std::shared_ptr<const Snapshot> snapshot() const override { return snap_; }
  std::shared_ptr<const config::Config> config() const override { return config_; }
  DaemonStatus& status() override { return status_; }
  TimePoint now() const override { return TimePoint{} + std::chrono::hours(1); }
  bool healthy() const override { return healthy_; }
  bool ready() const override { return false; }
  bool request_refresh(config::Glob glob) override {
    refreshes.push_back(glob.pattern());
    return accept_refresh;
  }

  std::shared_ptr<config::Config> config_ = std::make_shared<config::Config>();
  std::vector<std::string> refreshes;
  bool accept_refresh = true;
  bool healthy_ = true;

 private:
  std::shared_ptr<const Snapshot> snap_;
  DaemonStatus status_;
};

struct Client {
  FakeBackend backend;
  std::vector<std::unique_ptr<Route>> routes = make_routes(backend);

  Route& route(std::string_view path) {
    for (auto& r : routes)
      if (r->path() == path) return *r;
    throw std::runtime_error("no route " + std::string(path));
  }
  Response call(std::string_view route_path, Method m, std::string_view path, std::string_view query = {},
                std::vector<Header> headers = {}) {
    held_ = std::move(headers);
    Response r = route(route_path).handle(Request{m, path, query, held_});
    if (r.after_sent) r.after_sent();  // as the server does once it is written
    return r;
  }
  std::vector<Header> held_;
};

// The exposition without the exporter's and the process's own series, which
// differ from render to render (scrape duration, CPU, RSS).
std::string without_own_series(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl == std::string_view::npos ? text.size() : nl + 1);
    text.remove_prefix(line.size());
    if (line.find("memcg_exporter_") == std::string_view::npos && line.find("process_") == std::string_view::npos)
      out.append(line);
  }
  return out;
}

std::string header_value(const std::string& head, std::string_view name) {
  const std::string key = "\r\n" + std::string(name) + ": ";
  const size_t at = head.find(key);
  if (at == std::string::npos) return "<absent>";
  return head.substr(at + key.size(), head.find("\r\n", at + key.size()) - at - key.size());
}

TEST(Routes, MetricsBodyIsBuiltOncePerSnapshotAndSharedByScrapes) {
  Client c;
  const Response first = c.call("/metrics", Method::get, "/metrics");
  const Response second = c.call("/metrics", Method::get, "/metrics");
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.content_type, kTextFormat);
  EXPECT_NE(first.bytes().find("memcg_cgroup_info{cgroup_id=\"4\",cgroup=\"svc/c2\""), std::string_view::npos) << first.bytes();
  EXPECT_EQ(first.body.get(), second.body.get()) << "the second scrape of a snapshot reuses its body";
  c.backend.publish(2, 4);
  const Response third = c.call("/metrics", Method::get, "/metrics");
  EXPECT_NE(third.body.get(), first.body.get());
  EXPECT_NE(third.bytes().find("cgroup=\"svc/c3\""), std::string_view::npos);
  EXPECT_GT(c.backend.status().last_scrape_seconds.load(), 0.0) << "after_sent records the scrape";
}

TEST(Routes, MetricsAreGzippedOnlyWhenTheClientAcceptsIt) {
  Client c;
  const Response plain = c.call("/metrics", Method::get, "/metrics");
  const Response zipped = c.call("/metrics", Method::get, "/metrics", {}, {{"accept-encoding", "deflate, gzip"}});
  ASSERT_EQ(zipped.encoding, "gzip");
  EXPECT_EQ(without_own_series(gunzip(zipped.bytes())), without_own_series(plain.bytes()));
  const Response refused = c.call("/metrics", Method::get, "/metrics", {}, {{"Accept-Encoding", "gzip;q=0"}});
  EXPECT_EQ(refused.encoding, "");
  EXPECT_EQ(without_own_series(refused.bytes()), without_own_series(plain.bytes()));
  const std::string head = response_head(zipped, {}, 0, false);
  EXPECT_EQ(header_value(head, "Content-Encoding"), "gzip");
  EXPECT_EQ(header_value(head, "Vary"), "Accept-Encoding");
  EXPECT_EQ(header_value(head, "Content-Length"), std::to_string(zipped.bytes().size()));
}

TEST(Routes, HeadIsGetWithoutTheBody) {
  Client c;
  const Response get = c.call("/metrics", Method::get, "/metrics");
  const Response head = c.call("/metrics", Method::head, "/metrics");
  ASSERT_EQ(head.status, 200);
  const Request head_req{Method::head, "/metrics", {}, {}};
  EXPECT_FALSE(sends_body(head_req, head));
  EXPECT_TRUE(sends_body(Request{Method::get, "/metrics", {}, {}}, get));
  EXPECT_EQ(header_value(response_head(head, {}, 0, false), "Content-Length"), std::to_string(get.bytes().size()));
}

TEST(Routes, OtherPathsGet404AndOtherMethods405WithAllow) {
  Client c;
  EXPECT_EQ(c.call("/metrics", Method::get, "/metrics/extra").status, 404);
  EXPECT_EQ(c.call("/", Method::get, "/nothing-here").status, 404);
  const Response post = c.call("/metrics", Method::post, "/metrics");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(header_value(response_head(post, {}, 0, false), "Allow"), "GET, HEAD");
  const Response del = c.call("/-/healthy", Method::other, "/-/healthy");
  EXPECT_EQ(del.status, 405);
  const Response get_refresh = c.call("/api/v1/refresh", Method::get, "/api/v1/refresh");
  EXPECT_EQ(get_refresh.status, 405);
  EXPECT_EQ(header_value(response_head(get_refresh, {}, 0, false), "Allow"), "POST");
  EXPECT_NE(response_head(get_refresh, {}, 0, false).rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), std::string::npos);
}

TEST(Routes, ProbesSayWhyNot) {
  Client c;
  EXPECT_EQ(c.call("/-/healthy", Method::get, "/-/healthy").bytes(), "OK\n");
  const Response ready = c.call("/-/ready", Method::get, "/-/ready");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.bytes(), "first collection pass not done yet\n");
  c.backend.healthy_ = false;
  EXPECT_EQ(c.call("/-/healthy", Method::get, "/-/healthy").status, 503);
}

TEST(Routes, RefreshApiIsOffByDefaultAndBoundsWhatItTakes) {
  Client c;
  const auto refresh = [&](std::string_view query) { return c.call("/api/v1/refresh", Method::post, "/api/v1/refresh", query); };
  EXPECT_EQ(refresh("cgroup=svc/*").status, 403);
  c.backend.config_->web.refresh_api = true;
  EXPECT_EQ(refresh("").status, 400);
  EXPECT_EQ(refresh("other=x").bytes(), "missing ?cgroup=GLOB\n");
  EXPECT_EQ(refresh("cgroup=%zz").status, 400) << "a bad escape";
  EXPECT_EQ(refresh("cgroup=" + std::string(129, 'a')).bytes(), "glob too long (at most 128 bytes)\n");
  EXPECT_EQ(refresh("cgroup=" + std::string(128, 'a')).status, 202);
  EXPECT_EQ(refresh("cgroup=svc/%5B").status, 400) << "an unclosed class";
  const Response ok = refresh("x=1&cgroup=svc%2Fc%2A");
  EXPECT_EQ(ok.status, 202);
  EXPECT_EQ(ok.bytes(), "{\"status\":\"accepted\",\"cgroup\":\"svc/c*\",\"matching\":3}\n");
  EXPECT_EQ(c.backend.refreshes.back(), "svc/c*");
  c.backend.accept_refresh = false;
  const Response full = refresh("cgroup=svc/c1");
  EXPECT_EQ(full.status, 429);
  EXPECT_EQ(header_value(response_head(full, {}, 0, false), "Retry-After"), "1");
}

TEST(Routes, BasicAuthGuardsEveryPathOnlyWhenUsersAreSet) {
  WebSettings open;
  EXPECT_FALSE(authorize(Request{Method::get, "/metrics", {}, {}}, open));
  WebSettings guarded;
  guarded.auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"prom", bcrypt_hash("s3cret")}});
  const auto denied = authorize(Request{Method::get, "/", {}, {}}, guarded);
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(header_value(response_head(*denied, guarded, 0, false), "WWW-Authenticate"),
            "Basic realm=\"memcg-exporter\", charset=\"UTF-8\"");
  const std::vector<Header> wrong{{"Authorization", "Basic cHJvbTp4"}};  // prom:x
  EXPECT_EQ(authorize(Request{Method::get, "/metrics", {}, wrong}, guarded)->status, 401);
  const std::vector<Header> right{{"authorization", "Basic cHJvbTpzM2NyZXQ="}};  // prom:s3cret
  EXPECT_FALSE(authorize(Request{Method::get, "/metrics", {}, right}, guarded));
}

TEST(Response, HeadCarriesTheWebConfigHeadersDateAndClose) {
  WebSettings s;
  s.headers = {{"Strict-Transport-Security", "max-age=31536000"}};
  const Response r = Response::make(200, kPlainText, "OK\n");
  const std::string head = response_head(r, s, 1700000000, false);
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(header_value(head, "Strict-Transport-Security"), "max-age=31536000");
  EXPECT_EQ(header_value(head, "Date"), "Tue, 14 Nov 2023 22:13:20 GMT");
  EXPECT_EQ(header_value(head, "Connection"), "close");
  EXPECT_EQ(header_value(response_head(r, s, 1700000000, true), "Connection"), "keep-alive");
  EXPECT_EQ(header_value(head, "Content-Length"), "3");
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");
}

TEST(Request, QueryParametersAreFormDecoded) {
  EXPECT_EQ(query_param("a=1&cgroup=x%2Fy+z", "cgroup"), "x/y z");
  EXPECT_EQ(query_param("cgroup=", "cgroup"), "");
  EXPECT_EQ(query_param("cgroup", "cgroup"), "");
  EXPECT_FALSE(query_param("cgroups=x", "cgroup"));
  EXPECT_FALSE(query_param("cgroup=%4", "cgroup"));
  EXPECT_EQ(query_param("cgroup=a&cgroup=b", "cgroup"), "a") << "the first";
  const std::vector<Header> h{{"X-A", "1"}, {"x-a", "2"}};
  const Request req{Method::get, "/", {}, h};
  EXPECT_EQ(req.header("X-a"), "1");
  EXPECT_FALSE(Request{}.header("X-a"));
  EXPECT_EQ(method_of("HEAD"), Method::head);
  EXPECT_EQ(method_of("get"), Method::other) << "methods are case-sensitive";
}

}  // namespace
}  // namespace memcg::exporter
