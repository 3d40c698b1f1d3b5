#include "exporter/landing_page.h"

#include <cstdio>

#include "config/load.h"
#include "exporter/version.h"

namespace memcg::exporter {

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string render_landing_page(const Snapshot& snap, const config::Config& cfg, TimePoint now) {
  uint64_t reads = 0;
  for (auto r : snap.reads) reads += r;
  const uint64_t probes = reads + snap.skips;
  char ratio[32] = "n/a";
  if (probes > 0) std::snprintf(ratio, sizeof ratio, "%.1f%%", 100.0 * static_cast<double>(snap.skips) / static_cast<double>(probes));
  char age[32] = "no pass yet";
  if (snap.pass > 0) std::snprintf(age, sizeof age, "%.1f s ago", to_seconds(now - snap.taken_at));

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>memcg-exporter</title>\n"
       "<style>body{font-family:sans-serif;margin:2em;max-width:60em}td,th{padding:.2em .8em;text-align:left}"
       "pre{background:#f4f4f4;padding:1em}</style></head><body>\n";
  h += "<h1>memcg-exporter</h1>\n<p>Version " MEMCG_VERSION " (revision " MEMCG_REVISION ")</p>\n<table>\n";
  h += "<tr><th>cgroup2 root</th><td>" + html_escape(snap.root) + "</td></tr>\n";
  h += "<tr><th>cgroups collected</th><td id=\"cgroups\">" + std::to_string(snap.cgroups.size()) + "</td></tr>\n";
  h += "<tr><th>cgroups left out (max_cgroups)</th><td>" + std::to_string(snap.cgroups_limited) + "</td></tr>\n";
  h += "<tr><th>passes</th><td>" + std::to_string(snap.pass) + ", last " + age + "</td></tr>\n";
  h += "<tr><th>memory.stat reads</th><td>" + std::to_string(reads) + "</td></tr>\n";
  h += "<tr><th>reads avoided (skips)</th><td>" + std::to_string(snap.skips) + " (" + ratio + ")</td></tr>\n";
  h += "</table>\n<h2>Endpoints</h2>\n<ul>\n"
       "<li><a href=\"metrics\">/metrics</a> &mdash; Prometheus metrics</li>\n"
       "<li><a href=\"api/v1/cgroups\">/api/v1/cgroups</a> &mdash; the latest pass as JSON</li>\n"
       "<li><a href=\"-/healthy\">/-/healthy</a>, <a href=\"-/ready\">/-/ready</a></li>\n";
  if (cfg.web.refresh_api) h += "<li>POST /api/v1/refresh?cgroup=GLOB &mdash; re-read memory.stat on the next pass</li>\n";
  h += "</ul>\n<h2>Configuration</h2>\n<pre>" + html_escape(config::describe(cfg)) + "</pre>\n</body></html>\n";
  return h;
}

}  // namespace memcg::exporter
