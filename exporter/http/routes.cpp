#include "exporter/http/routes.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>

#include "exporter/http/basic_auth.h"
#include "exporter/http/gzip.h"
#include "exporter/exposition/landing_page.h"
#include "exporter/exposition/metrics.h"
#include "exporter/http/scrape_cache.h"
#include "base/version.h"
#include "plugin/json_writer.h"
#include "plugin/snapshot_json.h"

namespace memcg::exporter {

Response Route::handle(const Request& req) {
  if (req.path != path_) return Response::error(404, "404 page not found");
  const bool is_get = req.method == Method::get || req.method == Method::head;
  if (is_get && get_) return get(req);
  if (req.method == Method::post && post_) return post(req);
  Response r = Response::error(405, "405 method not allowed");
  r.headers.emplace_back("Allow", std::string(get_ ? "GET, HEAD" : "") + (get_ && post_ ? ", " : "") + (post_ ? "POST" : ""));
  return r;
}

std::optional<Response> authorize(const Request& req, const WebSettings& settings) {
  if (!settings.auth) return std::nullopt;
  switch (settings.auth->check(req.header("Authorization").value_or(""))) {
    case BasicAuth::Result::ok: return std::nullopt;
    case BasicAuth::Result::busy: {
      // Every bcrypt slot is taken (a flood of unknown credentials): answer
      // at once rather than queue; clients verified before never get here.
      Response r = Response::error(429, "429 too many authentication attempts at once, retry");
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    case BasicAuth::Result::denied: break;
  }
  Response r = Response::error(401, "401 unauthorized");
  r.headers.emplace_back("WWW-Authenticate", "Basic realm=\"memcg-exporter\", charset=\"UTF-8\"");
  return r;
}

namespace {

int64_t thread_cpu_ns() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// GET /metrics: the exposition of the latest snapshot (render_text), one
// body per snapshot and configuration shared by the scrapes that come
// while it is the latest (scrape_cache.h).
class MetricsEndpoint final : public Route {
 public:
  explicit MetricsEndpoint(WebBackend& b) : Route("/metrics", true, false), b_(b) {}
  Response get(const Request& req) override {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t cpu0 = thread_cpu_ns();
    const auto snap = b_.snapshot();
    const auto cfg = b_.config();
    const auto ae = req.header("Accept-Encoding");
    // Only a render reads /proc/self (the process series are among the
    // values); a scrape served from the cache touches nothing.
    const auto context = [&](const ProcessStats& proc) {
      return ScrapeContext{*snap, b_.now(), b_.status(), proc, MEMCG_VERSION, MEMCG_REVISION,
                           cfg->metrics.identity_labels, cfg->metrics.profile,
                           cfg->collector.max_stat_reads_per_second > 0};
    };
    const auto body = cache_.get(*snap, {snap->publication, cfg.get()}, ae && accepts_gzip(*ae),
                                 {[&](std::string& out) { render_identity(context(ProcessStats{}), out); },
                                  [&](text::Buffer& out, std::vector<size_t>& starts) { render_values(context(read_process_stats(fds_)), out, &starts); }});
    Response r;
    r.content_type = kTextFormat;
    r.body = body.bytes;
    if (body.gzip) r.encoding = "gzip";
    r.after_sent = [this, t0, cpu0] {
      cache_.drop_before(b_.latest_snapshot()->publication);  // superseded while we sent it: free it now
      if (cache_.take_trim_due()) release_freed_memory();
      b_.status().last_scrape_seconds.store(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      const int64_t ns = thread_cpu_ns() - cpu0;
      b_.status().scrape_cpu.ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(ns, 0)), std::memory_order_relaxed);
    };
    return r;
  }

 private:
  WebBackend& b_;
  ScrapeCache cache_;
  FdCounter fds_;
};

// GET /-/healthy (passes keep completing) and GET /-/ready (the first pass
// is done): 200 "OK", or 503 saying why not.
class ProbeEndpoint final : public Route {
 public:
  ProbeEndpoint(std::string path, WebBackend& b, bool (WebBackend::*ok)() const, std::string_view why_not)
      : Route(std::move(path), true, false), b_(b), ok_(ok), why_not_(why_not) {}
  Response get(const Request&) override {
    return (b_.*ok_)() ? Response::make(200, kPlainText, "OK\n") : Response::error(503, why_not_);
  }

 private:
  WebBackend& b_;
  bool (WebBackend::*ok_)() const;
  std::string_view why_not_;
};

// GET /api/v1/cgroups: the snapshot as JSON (the --once format).
class CgroupsEndpoint final : public Route {
 public:
  explicit CgroupsEndpoint(WebBackend& b) : Route("/api/v1/cgroups", true, false), b_(b) {}
  Response get(const Request& req) override {
    const auto snap = b_.snapshot();
    std::string body;
    render_snapshot_json(*snap, b_.now(), body, false);
    body.push_back('\n');
    Response r = Response::make(200, "application/json", std::move(body));
    gzip_if_accepted(req, r);
    r.after_sent = release_freed_memory;
    return r;
  }

 private:
  WebBackend& b_;
};

// POST /api/v1/refresh?cgroup=GLOB: re-read the matching cgroups next pass.
constexpr size_t kMaxGlobBytes = 128;
class RefreshEndpoint final : public Route {
 public:
  explicit RefreshEndpoint(WebBackend& b) : Route("/api/v1/refresh", false, true), b_(b) {}
  Response post(const Request& req) override {
    if (!b_.config()->web.refresh_api)
      return Response::error(403, "the refresh API is disabled: set [web] refresh_api = true");
    const auto param = query_param(req.query, "cgroup");
    if (!param) return Response::error(400, "missing ?cgroup=GLOB");
    const std::string& glob = *param;
    // Matching costs pattern length x path length per cgroup: a glob from the
    // network is short (configuration globs, trusted, are not bounded).
    if (glob.size() > kMaxGlobBytes) return Response::error(400, "glob too long (at most 128 bytes)");
    std::string err;
    auto g = config::Glob::compile(glob, &err);
    if (!g) return Response::error(400, "invalid glob: " + err);
    // Refused before any matching work: the pending requests are at their cap.
    if (!b_.request_refresh(*g)) {
      Response r = Response::error(429, "429 too many refresh requests waiting for the next pass");
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    // Held in a local: in `for (v : snapshot()->cgroups)` the shared_ptr
    // temporary dies before the loop runs, and a pass publishing meanwhile
    // frees the snapshot under it (found by the TSan concurrency test).
    const auto snap = b_.snapshot();
    const uint64_t matching = count_matching(*snap, *g);
    std::string body = "{\"status\":\"accepted\",\"cgroup\":";
    append_json_escaped(body, glob);
    body += ",\"matching\":" + std::to_string(matching) + "}\n";
    return Response::make(202, "application/json", std::move(body));
  }

 private:
  // Cgroups of `snap` matching `g`, counted once per glob and snapshot: the
  // same request repeated costs a map lookup, not a walk over every cgroup
  // (at most Collector::kMaxPendingRefresh distinct globs get this far).
  uint64_t count_matching(const Snapshot& snap, const config::Glob& g) {
    {
      std::lock_guard lock(mu_);
      if (counted_pass_ != snap.pass) {
        counted_.clear();
        counted_pass_ = snap.pass;
      }
      if (auto it = counted_.find(g.pattern()); it != counted_.end()) return it->second;
    }
    uint64_t n = 0;
    for (const auto& v : snap.cgroups) n += g.matches(v.id->path) ? 1u : 0u;
    std::lock_guard lock(mu_);
    if (counted_pass_ == snap.pass) counted_.emplace(g.pattern(), n);
    return n;
  }

  WebBackend& b_;
  std::mutex mu_;
  uint64_t counted_pass_ = 0;
  std::map<std::string, uint64_t> counted_;  // guarded by mu_
};

// GET /: the status page.
class StatusPageEndpoint final : public Route {
 public:
  explicit StatusPageEndpoint(WebBackend& b) : Route("/", true, false), b_(b) {}
  Response get(const Request&) override {
    return Response::make(200, "text/html; charset=utf-8", render_landing_page(*b_.snapshot(), *b_.config(), b_.now()));
  }

 private:
  WebBackend& b_;
};

}  // namespace

std::vector<std::unique_ptr<Route>> make_routes(WebBackend& backend) {
  std::vector<std::unique_ptr<Route>> r;
  r.push_back(std::make_unique<MetricsEndpoint>(backend));
  r.push_back(std::make_unique<ProbeEndpoint>("/-/healthy", backend, &WebBackend::healthy,
                                              "collector loop is not making progress"));
  r.push_back(std::make_unique<ProbeEndpoint>("/-/ready", backend, &WebBackend::ready, "first collection pass not done yet"));
  r.push_back(std::make_unique<CgroupsEndpoint>(backend));
  r.push_back(std::make_unique<RefreshEndpoint>(backend));
  r.push_back(std::make_unique<StatusPageEndpoint>(backend));
  return r;
}

}  // namespace memcg::exporter
