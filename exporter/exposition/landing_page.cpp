#include "exporter/exposition/landing_page.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "config/load.h"
#include "exporter/exposition/metrics.h"
#include "base/version.h"
#include "plugin/utf8.h"

namespace memcg::exporter {

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {  // well-formed UTF-8 as is, anything else U+FFFD
      const size_t len = utf8_sequence_length(s, i);
      if (len == 0) {
        out.append(kReplacementCharacter);
      } else {
        out.append(s.substr(i, len));
        i += len - 1;
      }
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (is_control(u)) out.append(kReplacementCharacter);  // ESC, CR, BEL...: nothing a page should carry
        else out.push_back(c);
    }
  }
  return out;
}

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt(u == 0 ? "%.0f" : "%.1f", b) + " " + units[u];
}

// A table cell whose sort key is a number, shown formatted.
std::string num_cell(double key, const std::string& shown, const char* cls = "") {
  return std::string("<td class=\"n ") + cls + "\" data-v=\"" + fmt("%.17g", key) + "\">" + html_escape(shown) + "</td>";
}

constexpr size_t kMaxRows = 200;

// Sorting by any column and filtering by text, without a framework.
constexpr const char* kScript = R"JS(
(function () {
  var table = document.getElementById('cgroups');
  if (!table) return;
  var body = table.tBodies[0];
  var heads = table.tHead.rows[0].cells;
  function key(row, i) {
    var c = row.cells[i];
    return c.hasAttribute('data-v') ? parseFloat(c.getAttribute('data-v')) : c.textContent.toLowerCase();
  }
  Array.prototype.forEach.call(heads, function (th, i) {
    th.className += ' sortable';
    th.addEventListener('click', function () {
      var desc = th.getAttribute('data-dir') !== 'desc';
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('data-dir'); });
      th.setAttribute('data-dir', desc ? 'desc' : 'asc');
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, i), y = key(b, i);
        return (x < y ? -1 : x > y ? 1 : 0) * (desc ? -1 : 1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  var filter = document.getElementById('filter');
  filter.addEventListener('input', function () {
    var q = filter.value.toLowerCase();
    Array.prototype.forEach.call(body.rows, function (r) {
      r.style.display = r.textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
    });
  });
  table.setAttribute('data-ready', 'yes');
})();
)JS";

}  // namespace

namespace {

// The document's head, style and title line.
std::string page_head() {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>memcg-exporter</title>\n"
         "<meta name=\"viewport\" content=\"width=device-width\">\n"
         "<style>body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}h1{margin:0 0 .3em}"
         "table{border-collapse:collapse}td,th{padding:.25em .7em;text-align:left;border-bottom:1px solid #e4e4e4}"
         "th.sortable{cursor:pointer;user-select:none}th[data-dir=desc]::after{content:' \\25BE'}"
         "th[data-dir=asc]::after{content:' \\25B4'}td.n{text-align:right;font-variant-numeric:tabular-nums}"
         ".warn{color:#b00}.dim{color:#888}.summary td:first-child{color:#555}"
         "td.cg{max-width:24em;word-break:break-all;font-size:.9em}td.who{max-width:14em;font-size:.9em}"
         "pre{background:#f6f6f6;padding:1em;overflow:auto}input{margin:.5em 0;padding:.3em;width:24em}</style></head><body>\n"
         "<h1>memcg-exporter</h1>\n<p class=\"dim\">Version " MEMCG_VERSION " (revision " MEMCG_REVISION ") &middot; "
         "<a href=\"metrics\">/metrics</a> &middot; <a href=\"api/v1/cgroups\">/api/v1/cgroups</a> &middot; "
         "<a href=\"-/healthy\">/-/healthy</a> &middot; <a href=\"-/ready\">/-/ready</a></p>\n";
}

// How the profile's per-cgroup series are keyed, for the summary.
std::string_view profile_keying(config::Profile p) {
  return p == config::Profile::cadvisor ? "cAdvisor's series with the kubelet's labels; the exporter's own keyed by id"
                                        : "per-cgroup series carry cgroup_id; the path is on memcg_cgroup_info";
}

// The summary table: what was collected, how often memory.stat was read, errors, the profile.
// Kill events of removed cgroups that their own reads missed
// (docs/oom.md#removed-before-read): said only once there were any.
std::string removed_kills(const Snapshot& snap) {
  if (snap.kills_recovered == 0 && snap.kills_unattributed == 0) return "";
  std::string s = "; " + std::to_string(snap.kills_recovered) + " kill events of removed cgroups recovered from their parent's count";
  if (snap.kills_unattributed) s += ", " + std::to_string(snap.kills_unattributed) + " left to the parent's count alone";
  return s;
}

std::string summary_table(const Snapshot& snap, const config::Config& cfg, TimePoint now) {
  uint64_t reads = 0, read_errors = 0, parse_errors = 0;
  for (auto r : snap.reads) reads += r;
  for (auto e : snap.read_errors) read_errors += e;
  for (auto e : snap.parse_errors) parse_errors += e;
  const uint64_t probes = reads + snap.skips;
  const std::string avoided = probes ? fmt("%.1f%%", 100.0 * static_cast<double>(snap.skips) / static_cast<double>(probes)) : "n/a";
  const std::string last = snap.pass > 0 ? fmt("%.1f s ago", to_seconds(now - snap.taken_at)) : "no pass yet";
  const std::string mean_read = snap.stat_read_seconds.count
      ? fmt("%.1f µs", snap.stat_read_seconds.sum / static_cast<double>(snap.stat_read_seconds.count) * 1e6) : "n/a";
  std::string h = "<table class=\"summary\" id=\"summary\">\n";
  h += "<tr><td>cgroup2 root</td><td>" + html_escape(snap.root) + "</td></tr>\n";
  h += "<tr><td>cgroups collected</td><td id=\"cgroup-count\">" + std::to_string(snap.cgroups.size()) +
       (snap.cgroups_limited ? " <span class=\"warn\">(" + std::to_string(snap.cgroups_limited) + " left out by max_cgroups)</span>" : "") +
       (snap.left_out.fd_budget + snap.left_out.fds_exhausted
            ? " <span class=\"warn\">(" + std::to_string(snap.left_out.fd_budget + snap.left_out.fds_exhausted) +
                  " left out for want of file descriptors: raise LimitNOFILE=)</span>"
            : "") +
       (snap.left_out.memory_budget
            ? " <span class=\"warn\">(" + std::to_string(snap.left_out.memory_budget) +
                  " left out to stay within the daemon's memory limit of " + fmt("%.0f MiB", static_cast<double>(snap.memory_budget) / (1 << 20)) +
                  ": raise MemoryMax= or the pod's limit)</span>"
            : "") +
       "</td></tr>\n";
  h += "<tr><td>collection passes</td><td>" + std::to_string(snap.pass) + ", last " + last + ", took " +
       fmt("%.1f ms", to_seconds(snap.pass_duration) * 1e3) + "</td></tr>\n";
  h += "<tr><td>memory.stat reads</td><td>" + std::to_string(reads) + " (mean " + mean_read + ")</td></tr>\n";
  h += "<tr><td>reads avoided</td><td id=\"avoided\">" + std::to_string(snap.skips) + " probes (" + avoided + ")</td></tr>\n";
  // OOM kills the kernel counted in the collected cgroups' own files, and
  // the removed cgroups whose counters are still served (docs/oom.md).
  uint64_t kills = 0;
  for (const auto& c : snap.cgroups)
    if (c.probe.events && c.probe.events->local) kills += c.probe.events->local->get(parse::ev_oom_kill).value_or(0);
  const size_t removed = snap.removed ? snap.removed->size() : 0;
  h += "<tr><td>OOM kills</td><td id=\"oom\">" + std::to_string(kills) + " in collected cgroups since they were created; " +
       std::to_string(removed) + " removed cgroups kept" +
       (snap.removed_dropped ? " (" + std::to_string(snap.removed_dropped) + " dropped for metrics.removed_max)" : "") + "; " +
       std::to_string(snap.event_wakeups) + " event wake-ups" + removed_kills(snap) + "</td></tr>\n";
  h += "<tr><td>errors</td><td" + std::string(read_errors + parse_errors ? " class=\"warn\"" : "") + ">" +
       std::to_string(read_errors) + " read, " + std::to_string(parse_errors) + " parse</td></tr>\n";
  const SeriesBudget budget = series_per_cgroup(cfg.defaults, cfg.metrics.profile, cfg.collector.max_stat_reads_per_second > 0);
  h += "<tr><td>/metrics profile</td><td id=\"profile\">" + std::string(config::profile_name(cfg.metrics.profile)) + ": " +
       std::to_string(budget.floor) + "&ndash;" + std::to_string(budget.most) + " series per cgroup under [defaults] (" +
       std::string(profile_keying(cfg.metrics.profile)) + ")</td></tr>\n";
  if (cfg.web.refresh_api) h += "<tr><td>refresh API</td><td>POST /api/v1/refresh?cgroup=GLOB</td></tr>\n";
  return h + "</table>\n";
}

// One row of the top-cgroups table.
std::string cgroup_row(const Snapshot& snap, const CgroupView& c, TimePoint now) {
  static const size_t inactive_file = *parse::stat_key_table().find("inactive_file");
  const auto id = [&](std::string_view label) { return std::string(snap.identity(*c.id, label)); };
  std::string who = !id("container_name").empty() ? id("container_name") : id("container_id").substr(0, 12);
  if (!id("pod").empty()) who = id("namespace") + "/" + id("pod") + "/" + who;
  if (const std::string rt = id("runtime"); !rt.empty() && rt != "raw" && rt != "systemd") who += " (" + rt + ")";
  const double cur = static_cast<double>(c.probe.current.value_or(0));
  double ws = cur;
  if (c.stat && c.stat->values->get(inactive_file)) ws = std::max(0.0, cur - static_cast<double>(*c.stat->values->get(inactive_file)));
  const double age = c.stat_age(now) ? to_seconds(*c.stat_age(now)) : -1;
  const double max_age = to_seconds(c.settings->max_age);
  uint64_t n_reads = 0;
  for (auto r : c.reads) n_reads += r;
  const double pending_ratio = c.settings->threshold ? static_cast<double>(c.pending) / static_cast<double>(c.settings->threshold) : 0;
  std::string h = "<tr><td class=\"cg\">" + html_escape(c.id->path) + "</td><td class=\"who\">" + html_escape(who) + "</td>";
  h += c.probe.current ? num_cell(cur, bytes(cur)) : num_cell(-1, "n/a", "dim");
  h += num_cell(ws, c.probe.current ? bytes(ws) : "n/a", c.probe.current ? "" : "dim");
  h += num_cell(age / max_age, age < 0 ? "never read" : fmt("%.1f", age) + " / " + fmt("%.0f s", max_age), age > max_age ? "warn" : "");
  h += num_cell(pending_ratio, bytes(static_cast<double>(c.pending)) + " / " + bytes(static_cast<double>(c.settings->threshold)));
  h += num_cell(static_cast<double>(n_reads), std::to_string(n_reads));
  h += num_cell(static_cast<double>(c.skips), std::to_string(c.skips));
  h += num_cell(to_seconds(c.read_wall), fmt("%.1f µs", to_seconds(c.read_wall) * 1e6));
  h += num_cell(to_seconds(c.read_cpu), fmt("%.1f µs", to_seconds(c.read_cpu) * 1e6));
  // The label every /metrics series of this cgroup carries, and its rule.
  h += "<td class=\"n\">" + std::to_string(c.id->inode) + "</td><td>" + html_escape(c.settings->name) + "</td>";
  return h + "</tr>\n";
}

// The largest cgroups by memory.current (the root, without one, last).
std::string top_cgroups(const Snapshot& snap, TimePoint now) {
  std::vector<const CgroupView*> rows;
  for (const auto& c : snap.cgroups) rows.push_back(&c);
  // std::sort with the snapshot's order as the tie-break (the rows point into
  // one vector): stable without std::stable_sort, whose temporary buffer
  // libstdc++ 12 allocates with new(nothrow) and returns with free (an
  // alloc-dealloc mismatch AddressSanitizer reports).
  std::sort(rows.begin(), rows.end(), [](const CgroupView* a, const CgroupView* b) {
    const uint64_t ca = a->probe.current.value_or(0), cb = b->probe.current.value_or(0);
    return ca != cb ? ca > cb : a < b;
  });
  if (rows.size() > kMaxRows) rows.resize(kMaxRows);
  std::string h = "<h2>Top cgroups by memory</h2>\n<input id=\"filter\" placeholder=\"filter by cgroup, container, pod…\">\n";
  h += "<table id=\"cgroups\"><thead><tr><th>cgroup</th><th>container</th><th>memory.current</th><th>working set</th>"
       "<th>age / max_age</th><th>pending / threshold</th><th>reads</th><th>skips</th><th>read time</th>"
       "<th>read CPU</th><th>cgroup_id</th><th>rule</th></tr></thead>\n<tbody>\n";
  for (const CgroupView* c : rows) h += cgroup_row(snap, *c, now);
  h += "</tbody></table>\n";
  if (snap.cgroups.size() > kMaxRows)
    h += "<p class=\"dim\">" + std::to_string(kMaxRows) + " of " + std::to_string(snap.cgroups.size()) +
         " cgroups shown; all are in /api/v1/cgroups.</p>\n";
  return h;
}

// The kernel: what it adds to a value's staleness and its features (found at start).
std::string kernel_table(const Snapshot& snap) {
  if (!snap.kernel) return {};
  const cgroupfs::KernelFacts& k = *snap.kernel;
  std::string h = "<h2>Kernel</h2>\n<table class=\"summary\" id=\"kernel\">\n";
  h += "<tr><td>release</td><td>" + html_escape(k.release) + ", " + std::to_string(k.host.online_cpus) + " online CPUs</td></tr>\n";
  h += "<tr><td>memory.stat lag</td><td id=\"kernel-lag\">up to " + bytes(static_cast<double>(k.stat_lag_bytes())) +
       " behind when read (flush threshold " + std::to_string(k.flush_threshold_updates()) + " updates = " +
       bytes(static_cast<double>(k.flush_threshold_bytes())) + ", " +
       (k.has("stat_flush_per_cgroup") ? "per cgroup subtree" : "host-wide") + "; periodic flush every " +
       std::to_string(cgroupfs::kPeriodicFlush.count()) + " s)</td></tr>\n";
  h += std::string("<tr><td>file system</td><td id=\"root-fs\">") +
       (k.root_fs == cgroupfs::RootFs::cgroup2fs
            ? "cgroup2fs"
            : "not cgroup2fs (a fixture or demo tree): read only, no cgroup file is written") +
       "</td></tr>\n";
  for (const auto& f : k.features) {
    std::string used;
    if (f.name == "memory_peak_fd_reset" && f.present)
      used = " (" + std::to_string(snap.peak_reset_cgroups) + " of " + std::to_string(snap.cgroups.size()) +
             " cgroups" + (snap.peak_reset_cgroups == 0 ? ": no write access here" : "") + ")";
    h += "<tr><td>" + std::string(f.name) + "</td><td class=\"feature\">" + (f.present ? "yes" : "no") + ": " +
         html_escape(f.note) + used + "</td></tr>\n";
  }
  return h + "</table>\n";
}

}  // namespace

std::string render_landing_page(const Snapshot& snap, const config::Config& cfg, TimePoint now) {
  // The configuration is text of several lines: each escaped on its own,
  // its line breaks kept (html_escape turns every control byte, a newline
  // too, into U+FFFD, which printed the block as one line with a glitch in it).
  const std::string cfg_text = config::describe(cfg);
  std::string cfg_html;
  for (size_t at = 0; at < cfg_text.size();) {
    const size_t nl = std::min(cfg_text.find('\n', at), cfg_text.size());
    cfg_html += html_escape(std::string_view(cfg_text).substr(at, nl - at)) + (nl < cfg_text.size() ? "\n" : "");
    at = nl + 1;
  }
  return page_head() + summary_table(snap, cfg, now) + top_cgroups(snap, now) + kernel_table(snap) +
         "<h2>Configuration</h2>\n<pre>" + cfg_html + "</pre>\n<script>" + std::string(kScript) + "</script>\n</body></html>\n";
}

}  // namespace memcg::exporter
