#include "exporter/http_routes.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>

#include "exporter/http_response.h"
#include "exporter/landing_page.h"
#include "exporter/metrics.h"
#include "exporter/scrape_cache.h"
#include "exporter/version.h"
#include "plugin/json_writer.h"
#include "plugin/snapshot_json.h"

namespace memcg::exporter {

bool Route::handleGet(CivetServer*, mg_connection* c) { return dispatch(c, get_, false); }
bool Route::handleHead(CivetServer*, mg_connection* c) { return dispatch(c, get_, false); }
bool Route::handlePost(CivetServer*, mg_connection* c) { return dispatch(c, post_, true); }
bool Route::handlePut(CivetServer*, mg_connection* c) { return dispatch(c, false, false); }
bool Route::handleDelete(CivetServer*, mg_connection* c) { return dispatch(c, false, false); }
bool Route::handleOptions(CivetServer*, mg_connection* c) { return dispatch(c, false, false); }
bool Route::handlePatch(CivetServer*, mg_connection* c) { return dispatch(c, false, false); }

bool Route::dispatch(mg_connection* c, bool allowed, bool post) {
  if (uri_of(c) != path_) {
    error(c, 404, "404 page not found");
  } else if (!allowed) {
    const std::string allow = std::string(get_ ? "GET, HEAD" : "") + (get_ && post_ ? ", " : "") + (post_ ? "POST" : "");
    respond(c, 405, kPlainText, "405 method not allowed\n", {}, "Allow", allow);
  } else if (post) {
    this->post(c);
  } else {
    get(c);
  }
  return true;
}

namespace {

// GET /metrics: the exposition of the latest snapshot, written straight from
// it (render_text: prometheus-cpp's bytes without a ClientMetric per sample),
// one body per snapshot and configuration shared by the scrapes that come
// while it is the latest (scrape_cache.h).
class MetricsEndpoint final : public Route {
 public:
  explicit MetricsEndpoint(WebBackend& b) : Route("/metrics", true, false), b_(b) {}
  void get(mg_connection* c) override {
    const auto t0 = std::chrono::steady_clock::now();
    timespec cpu0{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    const auto snap = b_.snapshot();
    const auto cfg = b_.config();
    const char* ae = mg_get_header(c, "Accept-Encoding");
    // Only a render reads /proc/self (the process series are among the
    // values); a scrape served from the cache touches nothing.
    const auto context = [&](const ProcessStats& proc) {
      return ScrapeContext{*snap, b_.now(), b_.status(), proc, MEMCG_VERSION, MEMCG_REVISION,
                           cfg->metrics.identity_labels, cfg->metrics.profile,
                           cfg->collector.max_stat_reads_per_second > 0};
    };
    const auto body = cache_.get(*snap, {snap->publication, cfg.get()}, ae && accepts_gzip(ae),
                                 {[&](std::string& out) { render_identity(context(ProcessStats{}), out); },
                                  [&](std::string& out) { render_values(context(read_process_stats(fds_)), out); }});
    respond(c, 200, kTextFormat, *body.bytes, body.gzip ? "gzip" : "");
    cache_.drop_before(b_.snapshot()->publication);  // superseded while we sent it: free it now
    release_freed_memory();
    b_.status().last_scrape_seconds.store(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    timespec cpu1{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    const int64_t ns = (cpu1.tv_sec - cpu0.tv_sec) * 1'000'000'000 + (cpu1.tv_nsec - cpu0.tv_nsec);
    b_.status().scrape_cpu.ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(ns, 0)), std::memory_order_relaxed);
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
  void get(mg_connection* c) override {
    if ((b_.*ok_)()) respond(c, 200, kPlainText, "OK\n");
    else error(c, 503, why_not_);
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
  void get(mg_connection* c) override {
    const auto snap = b_.snapshot();
    std::string body;
    render_snapshot_json(*snap, b_.now(), body, false);
    body.push_back('\n');
    respond_maybe_gzip(c, "application/json", body);
    body = std::string();
    release_freed_memory();
  }

 private:
  WebBackend& b_;
};

// POST /api/v1/refresh?cgroup=GLOB: re-read the matching cgroups next pass.
constexpr size_t kMaxGlobBytes = 128;
class RefreshEndpoint final : public Route {
 public:
  explicit RefreshEndpoint(WebBackend& b) : Route("/api/v1/refresh", false, true), b_(b) {}
  void post(mg_connection* c) override {
    if (!b_.config()->web.refresh_api) return error(c, 403, "the refresh API is disabled: set [web] refresh_api = true");
    const mg_request_info* ri = mg_get_request_info(c);
    std::string glob;
    if (!ri->query_string || !CivetServer::getParam(ri->query_string, "cgroup", glob))
      return error(c, 400, "missing ?cgroup=GLOB");
    // Matching costs pattern length x path length per cgroup: a glob from the
    // network is short (configuration globs, trusted, are not bounded).
    if (glob.size() > kMaxGlobBytes) return error(c, 400, "glob too long (at most 128 bytes)");
    std::string err;
    auto g = config::Glob::compile(glob, &err);
    if (!g) return error(c, 400, "invalid glob: " + err);
    // Refused before any matching work: the pending requests are at their cap.
    if (!b_.request_refresh(*g))
      return respond(c, 429, kPlainText, "429 too many refresh requests waiting for the next pass\n", {}, "Retry-After", "1");
    // Held in a local: in `for (v : snapshot()->cgroups)` the shared_ptr
    // temporary dies before the loop runs, and a pass publishing meanwhile
    // frees the snapshot under it (found by the TSan concurrency test).
    const auto snap = b_.snapshot();
    const uint64_t matching = count_matching(*snap, *g);
    std::string body = "{\"status\":\"accepted\",\"cgroup\":";
    append_json_escaped(body, glob);
    body += ",\"matching\":" + std::to_string(matching) + "}\n";
    respond(c, 202, "application/json", body);
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
  void get(mg_connection* c) override {
    respond(c, 200, "text/html; charset=utf-8", render_landing_page(*b_.snapshot(), *b_.config(), b_.now()));
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
