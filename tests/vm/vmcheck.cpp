// memcg-vmcheck: runs inside the real-kernel VM next to memcg-exporter and
// checks what it serves against the kernel's own files:
//   freshness  memcg_stat_age_seconds <= memcg_stat_max_age_seconds at every scrape
//   reasons    idle cgroups are only re-read by max_age; busy ones by threshold;
//              the oom cgroup shows oom_kill and an event read
//   values     with the workloads frozen, memory.current and memory.events equal
//              a direct read exactly; memory.stat anon/file within
//              pending change + the kernel's lag (as served)
//   bound      with the workloads running, a fresh memory.stat read after
//              each scrape within the total bound for >= 99.9 % of values
//   churn      removed cgroups leave /metrics, recreated ones start fresh,
//              open fds stay flat, the exporter logs no warnings
//   costs      measured memory.stat vs memory.current read cost (information)
// Prints "CHECK <name> ok|FAIL ..." lines and "VMCHECK PASS|FAIL"; exit 0 on pass.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/vm/http_get.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Options {
  int port = 9756;
  std::string root = "/sys/fs/cgroup";
  std::string log;                          // exporter log file
  std::vector<std::string> idle, busy, freeze, churn;
  std::string oom, high;
  double probe = 1, rescan = 2;
  int cpus = 2;
};

int g_failures = 0;
int g_scrapes = 0, g_age_violations = 0;

void check(bool ok, const std::string& name, const std::string& detail = "") {
  std::printf("CHECK %s %s%s%s\n", name.c_str(), ok ? "ok" : "FAIL", detail.empty() ? "" : " ", detail.c_str());
  std::fflush(stdout);
  if (!ok) ++g_failures;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// One scrape: series text ("name{labels}") -> value.
struct Scrape {
  std::map<std::string, double> v;
  bool has(const std::string& k) const { return v.count(k) != 0; }
  double at(const std::string& k) const {
    auto it = v.find(k);
    return it == v.end() ? NAN : it->second;
  }
  std::set<std::string> cgroups() const {
    std::set<std::string> out;
    const std::string p = "memcg_stat_threshold_bytes{cgroup=\"";
    for (auto it = v.lower_bound(p); it != v.end() && it->first.compare(0, p.size(), p) == 0; ++it)
      out.insert(it->first.substr(p.size(), it->first.size() - p.size() - 2));
    return out;
  }
};

std::string key(const std::string& name, const std::string& cg, const std::string& label = "", const std::string& value = "") {
  std::string k = name + "{cgroup=\"" + cg + "\"";
  if (!label.empty()) k += "," + label + "=\"" + value + "\"";
  return k + "}";
}

// What the exporter said of its own passes at a scrape that broke the age
// bound, and at the one after it (an overrun is counted when the late pass
// ends): whether its passes ran late, or the reply took long to come.
void explain_ages(const Scrape& s, int violations, double took, double wall) {
  static bool again = false;
  static double last_wall = 0;
  if (violations > 0 || again) {
    std::printf("age context: %s scrape: reply in %.3f s, %.3f s after the previous one; exporter: passes %.0f, "
                "overruns %.0f, last pass began %.3f s before the reply, previous scrape took %.3f s, "
                "passes %.4f s on average\n",
                violations ? "this" : "the next", took, wall - last_wall, s.at("memcg_exporter_passes_total"),
                s.at("memcg_exporter_pass_overruns_total"), wall - s.at("memcg_exporter_last_pass_timestamp_seconds"),
                s.at("memcg_exporter_scrape_duration_seconds"),
                s.at("memcg_exporter_pass_duration_seconds_sum") / s.at("memcg_exporter_pass_duration_seconds_count"));
  }
  again = violations > 0;
  last_wall = wall;
}

// Series carry cgroup_id; memcg_cgroup_info maps it to the path. Keys are
// written with the path instead (cgroup="..."), as a PromQL join would.
Scrape scrape(const Options& o) {
  Scrape s;
  std::vector<std::pair<std::string, double>> raw;
  std::map<std::string, std::string> paths;  // cgroup_id="N" -> cgroup="P"
  const auto asked = Clock::now();
  const std::string body = http_get(o.port, "/metrics");
  const double took = std::chrono::duration<double>(Clock::now() - asked).count();
  const double wall = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Removed cgroups keep their info and event counters a while, marked: the
  // checks are about the live ones.
  std::set<std::string> removed;  // cgroup_id="N"
  const std::string mark = "\nmemcg_cgroup_removed_timestamp_seconds{";
  for (size_t at = body.find(mark); at != std::string::npos; at = body.find(mark, at + 1)) {
    const size_t b = at + mark.size(), e = body.find_first_of(",}", b);
    removed.insert(body.substr(b, e - b));
  }
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (const size_t id = line.find("{cgroup_id=\""); id != std::string::npos) {
      const size_t e = line.find_first_of(",}", id + 1);
      if (removed.count(line.substr(id + 1, e - id - 1))) continue;
    }
    const size_t sp = line.rfind(' ');
    raw.emplace_back(line.substr(0, sp), std::strtod(line.c_str() + sp + 1, nullptr));
    const std::string info = "memcg_cgroup_info{";
    if (line.compare(0, info.size(), info) == 0) {
      const size_t id_end = line.find(',', info.size()), path_end = line.find("\",", id_end);
      if (id_end != std::string::npos && path_end != std::string::npos)
        paths[line.substr(info.size(), id_end - info.size())] = line.substr(id_end + 1, path_end + 1 - id_end - 1);
    }
  }
  for (auto& [k, v] : raw) {
    const size_t open = k.find("{cgroup_id=\"");
    if (open != std::string::npos) {
      const size_t end = k.find('"', open + 12) + 1;
      const std::string id = k.substr(open + 1, end - open - 1);
      if (k.compare(end, 9, ",cgroup=\"") == 0) k.erase(open + 1, end - open);  // the path is there already
      else if (auto p = paths.find(id); p != paths.end()) k.replace(open + 1, end - open - 1, p->second);
    }
    s.v[k] = v;
  }
  ++g_scrapes;
  // Every scrape: no cgroup's memory.stat may be older than its bound.
  int violations = 0;
  for (const auto& cg : s.cgroups()) {
    const double age = s.at(key("memcg_stat_age_seconds", cg)), max = s.at(key("memcg_stat_max_age_seconds", cg));
    if (!(age <= max)) {
      ++violations;
      std::printf("age violation: %s age=%.3f max=%.3f\n", cg.c_str(), age, max);
    }
  }
  g_age_violations += violations;
  explain_ages(s, violations, took, wall);
  return s;
}

std::string dir(const Options& o, const std::string& cg) { return cg == "/" ? o.root : o.root + "/" + cg; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, uint64_t> read_keyed(const std::string& path) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(read_file(path));
  std::string k;
  uint64_t v;
  while (in >> k >> v) out[k] = v;
  return out;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

void wait_ready(const Options& o) {
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline) {
    if (http_get(o.port, "/-/ready") == "OK\n") return;
    sleep_s(0.2);
  }
  check(false, "ready", "exporter not ready after 60 s");
  std::exit(1);
}

void check_freshness(const Options& o, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    scrape(o);
    sleep_s(0.25);
  }
  check(g_age_violations == 0, "freshness",
        std::to_string(g_scrapes) + " scrapes, " + std::to_string(g_age_violations) + " age > max_age");
}

void check_reasons(const Options& o) {
  const Scrape s = scrape(o);
  auto reads = [&](const std::string& cg, const char* r) { return s.at(key("memcg_stat_reads_total", cg, "reason", r)); };
  int bad = 0;
  std::string detail;
  for (const auto& cg : o.idle) {
    const bool ok = reads(cg, "initial") == 1 && reads(cg, "threshold") == 0 && reads(cg, "event") == 0 &&
                    reads(cg, "max_age") >= 1 && s.at(key("memcg_stat_skips_total", cg)) >= 1;
    if (!ok) {
      ++bad;
      detail += " " + cg + "(initial=" + std::to_string(reads(cg, "initial")) + " threshold=" +
                std::to_string(reads(cg, "threshold")) + " max_age=" + std::to_string(reads(cg, "max_age")) + ")";
    }
  }
  check(bad == 0, "idle-cgroups-skipped", std::to_string(o.idle.size()) + " idle cgroups checked" + detail);
  for (const auto& cg : o.busy)
    check(reads(cg, "threshold") >= 1, "busy-cgroup-threshold-reads",
          cg + " threshold reads=" + std::to_string(reads(cg, "threshold")));
  check(s.at(key("memcg_memory_events_total", o.oom, "event", "oom_kill")) >= 1 && reads(o.oom, "event") >= 1,
        "oom-event-read", o.oom + " oom_kill=" + std::to_string(s.at(key("memcg_memory_events_total", o.oom, "event", "oom_kill"))) +
        " event reads=" + std::to_string(reads(o.oom, "event")));
  // Every cgroup but the root (which has no memory.events) is polled on cgroupfs.
  const double polled = s.at("memcg_exporter_cgroups_events_polled"), cgroups = s.at("memcg_exporter_cgroups");
  check(polled == cgroups - 1, "memory.events-polled", std::to_string(polled) + " of " + std::to_string(cgroups) + " cgroups");
  check(s.at(key("memcg_memory_events_total", o.high, "event", "high")) >= 1, "high-events",
        o.high + " high=" + std::to_string(s.at(key("memcg_memory_events_total", o.high, "event", "high"))));
}

void set_frozen(const Options& o, bool frozen) {
  for (const auto& cg : o.freeze) std::ofstream(dir(o, cg) + "/cgroup.freeze") << (frozen ? "1" : "0");
  if (!frozen) return;
  for (const auto& cg : o.freeze)
    for (int i = 0; i < 100 && read_keyed(dir(o, cg) + "/cgroup.events")["frozen"] != 1; ++i) sleep_s(0.05);
}

// memory.current of every frozen cgroup and its ancestors.
std::map<std::string, std::string> frozen_currents(const Options& o) {
  std::map<std::string, std::string> out;
  for (const auto& cg : o.freeze)
    for (std::string p = cg; !p.empty(); p = p.find('/') == std::string::npos ? "" : p.substr(0, p.rfind('/')))
      out[p] = read_file(dir(o, p) + "/memory.current");
  return out;
}

// Values checked against their bounds: how many within, in all and per class.
struct Tally {
  long samples = 0, within = 0, printed = 0;
  std::map<std::string, std::pair<long, long>> by_class;  // class -> (within, samples)
  double worst = 0;
  bool add(const std::string& cls, double diff, double bound) {
    auto& c = by_class[cls];
    ++samples;
    ++c.second;
    worst = std::max(worst, diff / bound);
    if (diff > bound) return false;
    ++within;
    ++c.first;
    return true;
  }
};

// A frozen cgroup can still shrink for a moment: an OOM victim's memory is
// uncharged as it exits, after the freeze. Waits until the kernel's values
// hold still for a probe interval, then lets two probes see them.
void settle_frozen(const Options& o) {
  int settle_rounds = 0;
  for (auto before = frozen_currents(o); settle_rounds < 20; ++settle_rounds) {
    sleep_s(o.probe);
    auto after = frozen_currents(o);
    if (after == before) break;
    before = std::move(after);
  }
  sleep_s(2.5 * o.probe);
}

// memory.stat anon and file against a direct read: within the pending
// change plus the kernel's lag (the workloads frozen).
Tally frozen_stat_bound(const Options& o, const Scrape& s, double lag) {
  Tally t;
  for (const auto& cg : s.cgroups()) {
    // The root has no memory.current: changes of tasks in the root itself cannot
    // be probed, so only its age bound applies (checked at every scrape).
    if (cg == "/" || cg == "agent") continue;
    const auto st = read_keyed(dir(o, cg) + "/memory.stat");
    const double bound = s.at(key("memcg_stat_pending_change_bytes", cg)) + lag;
    for (const char* f : {"anon", "file"}) {
      const double exported = s.at(key("memcg_memory_stat_bytes", cg, "stat", f));
      const double diff = std::fabs(exported - static_cast<double>(st.at(f)));
      if (!t.add("frozen", diff, bound))
        std::printf("stat out of bound %s %s: exported %.0f direct %llu bound %.0f\n", cg.c_str(), f, exported,
                    static_cast<unsigned long long>(st.at(f)), bound);
    }
  }
  return t;
}

// The cgroups whose memory.current or memory.events differ from a direct read.
std::vector<std::string> current_mismatches(const Options& o, const Scrape& sc, const std::vector<std::string>& cgs,
                                            bool print) {
  std::vector<std::string> bad;
  for (const auto& cg : cgs) {
    const std::string d = dir(o, cg);
    bool ok = std::strtod(read_file(d + "/memory.current").c_str(), nullptr) == sc.at(key("memcg_memory_current_bytes", cg));
    for (const auto& [ev, val] : read_keyed(d + "/memory.events"))
      ok = ok && sc.at(key("memcg_memory_events_total", cg, "event", ev)) == static_cast<double>(val);
    if (!ok) {
      bad.push_back(cg);
      if (print)
        std::printf("mismatch %s: exported current %.0f, direct %s", cg.c_str(), sc.at(key("memcg_memory_current_bytes", cg)),
                    read_file(d + "/memory.current").c_str());
    }
  }
  return bad;
}

void check_values(const Options& o) {
  set_frozen(o, true);
  settle_frozen(o);
  const Scrape s = scrape(o);
  // The kernel's lag as served: twice MEMCG_CHARGE_BATCH pages per online CPU.
  const double lag = s.at("memcg_kernel_stat_lag_max_bytes");
  check(lag == 2 * 64.0 * 4096 * o.cpus && s.at("memcg_kernel_stat_flush_threshold_bytes") == 64.0 * 4096 * o.cpus,
        "kernel-term-served", "lag " + std::to_string(lag) + " bytes on " + std::to_string(o.cpus) + " CPUs");
  const Tally stat = frozen_stat_bound(o, s, lag);
  // memory.current and memory.events must equal a direct read exactly. Even a
  // frozen cgroup's memory.current can move between the exporter's probe and
  // our read: the kernel returns a cgroup's per-CPU charge stock (up to
  // MEMCG_CHARGE_BATCH pages per CPU) when another cgroup charges on that CPU.
  // So a mismatch is re-checked after the next probes: the exporter must then
  // show exactly the new value.
  std::vector<std::string> probed;
  for (const auto& cg : s.cgroups())  // the agent's own cgroup cannot hold still while measured
    if (cg != "agent" && access((dir(o, cg) + "/memory.current").c_str(), F_OK) == 0) probed.push_back(cg);
  auto bad = current_mismatches(o, s, probed, false);
  const size_t first_mismatches = bad.size();
  for (int retry = 0; retry < 3 && !bad.empty(); ++retry) {
    sleep_s(1.5 * o.probe);
    bad = current_mismatches(o, scrape(o), bad, retry == 2);
  }
  set_frozen(o, false);
  check(bad.empty() && probed.size() > 200, "memory.current-and-events-exact",
        std::to_string(probed.size()) + " cgroups, " + std::to_string(bad.size()) + " differ; " +
            std::to_string(first_mismatches) + " moved in the kernel after the probe and were matched at a later probe");
  char buf[96];
  std::snprintf(buf, sizeof buf, "%ld fields, %ld out of bound, worst |diff|/bound = %.2f", stat.samples,
                stat.samples - stat.within, stat.worst);
  check(stat.within == stat.samples, "memory.stat-within-bound", buf);
}

// The total bound held to account with the workloads running: right after
// each scrape, a fresh read of every cgroup's memory.stat against what was
// served. A served amount may differ from the fresh read by
//   the probed change since the exporter's read (pending, below the rule's
//     threshold, or it would have been re-read),
// + the change since the exporter's last probe, counted the way the exporter
//     counts it (each cgroup's local change, |delta current - sum of its
//     children's|, summed over the subtree: two children moving in opposite
//     directions move their parent's anon and file, not its memory.current),
//     from fresh memory.current reads before and after the memory.stat reads,
// + the kernel's lag at the exporter's read and at this one
//     (memcg_kernel_stat_lag_max_bytes each).
// At least 99.9 % of the samples must fall within it; the misses are printed.
using Values = std::map<std::string, double>;

std::string parent_of(const std::string& cg) { return cg.find('/') == std::string::npos ? "/" : cg.substr(0, cg.rfind('/')); }

// Sum over each cgroup's subtree of |x - sum of x over its children|.
Values subtree_local_change(const Values& x) {
  Values children, out;
  for (const auto& [cg, v] : x) children[parent_of(cg)] += v;
  std::vector<std::pair<size_t, std::string>> deepest_first;
  for (const auto& [cg, v] : x) deepest_first.emplace_back(std::count(cg.begin(), cg.end(), '/'), cg);
  std::sort(deepest_first.rbegin(), deepest_first.rend());
  for (const auto& [depth, cg] : deepest_first) {
    out[cg] += std::fabs(x.at(cg) - children[cg]);
    out[parent_of(cg)] += out[cg];
  }
  return out;
}

// Which of the workloads a cgroup is, for the per-class counts.
std::string workload_class(const Options& o, const std::string& cg) {
  if (std::find(o.busy.begin(), o.busy.end(), cg) != o.busy.end()) return "busy";
  if (cg == o.oom) return "oom-looping";
  if (cg == o.high) return "high-throttled";
  if (std::find(o.idle.begin(), o.idle.end(), cg) != o.idle.end()) return "idle";
  return "other";
}

// memory.current of each cgroup now; NaN for one removed since.
Values read_currents(const Options& o, const std::vector<std::string>& cgs) {
  Values v;
  for (const auto& cg : cgs) {
    const std::string text = read_file(dir(o, cg) + "/memory.current");  // "" once removed
    v[cg] = text.empty() ? NAN : std::strtod(text.c_str(), nullptr);
  }
  return v;
}

// One scrape, then every cgroup's memory.current, memory.stat and
// memory.current again, each served anon and file value against its bound.
void hold_one_scrape(const Options& o, Tally& t) {
  const Scrape s = scrape(o);
  const double lag = s.at("memcg_kernel_stat_lag_max_bytes");
  std::vector<std::string> cgs;
  for (const auto& cg : s.cgroups())
    if (cg != "/" && cg != "agent" && s.has(key("memcg_memory_current_bytes", cg))) cgs.push_back(cg);
  const Values before = read_currents(o, cgs);
  std::map<std::string, std::map<std::string, uint64_t>> stats;
  for (const auto& cg : cgs) stats[cg] = read_keyed(dir(o, cg) + "/memory.stat");
  const Values after = read_currents(o, cgs);
  Values since_probe, during_check;
  for (const auto& cg : cgs) {
    since_probe[cg] = before.at(cg) - s.at(key("memcg_memory_current_bytes", cg));
    during_check[cg] = after.at(cg) - before.at(cg);
  }
  const Values unprobed = subtree_local_change(since_probe), moved = subtree_local_change(during_check);
  for (const auto& cg : cgs) {
    const auto& st = stats[cg];
    if (st.empty() || std::isnan(before.at(cg)) || std::isnan(after.at(cg))) continue;  // removed since the scrape
    const double pending = s.at(key("memcg_stat_pending_change_bytes", cg));
    const double bound = pending + unprobed.at(cg) + moved.at(cg) + 2 * lag;
    for (const char* f : {"anon", "file"}) {
      const double served = s.at(key("memcg_memory_stat_bytes", cg, "stat", f));
      const double diff = std::fabs(served - static_cast<double>(st.at(f)));
      if (!t.add(workload_class(o, cg), diff, bound) && t.printed++ < 10)
        std::printf("held-to-account miss %s %s: served %.0f fresh %llu |diff| %.0f > bound %.0f (pending %.0f, since the "
                    "probe %.0f, during the check %.0f, kernel 2 x %.0f)\n",
                    cg.c_str(), f, served, static_cast<unsigned long long>(st.at(f)), diff, bound, pending, unprobed.at(cg),
                    moved.at(cg), lag);
    }
  }
}

void check_held_to_account(const Options& o, int scrapes) {
  Tally t;
  for (int i = 0; i < scrapes; ++i) {
    hold_one_scrape(o, t);
    sleep_s(o.probe);
  }
  std::printf("held-to-account by workload:");
  for (const auto& [cls, n] : t.by_class) std::printf(" %s %ld/%ld", cls.c_str(), n.first, n.second);
  std::printf("\n");
  char buf[160];
  std::snprintf(buf, sizeof buf, "%ld of %ld samples within the bound (%.3f %%), worst |diff|/bound %.2f, %d scrapes",
                t.within, t.samples, t.samples ? 100.0 * static_cast<double>(t.within) / static_cast<double>(t.samples) : 0.0,
                t.worst, scrapes);
  check(t.samples > 1000 && static_cast<double>(t.within) >= 0.999 * static_cast<double>(t.samples), "held-to-account", buf);
}

void check_churn(const Options& o) {
  const double settle = o.rescan + 1.5 * o.probe;
  const double fds0 = scrape(o).at("process_open_fds");
  for (int round = 0; round < 3; ++round) {
    for (const auto& cg : o.churn) rmdir(dir(o, cg).c_str());
    sleep_s(settle);
    Scrape s = scrape(o);
    int still = 0;
    for (const auto& cg : o.churn) still += s.has(key("memcg_stat_threshold_bytes", cg)) ? 1 : 0;
    check(still == 0, "removed-cgroups-gone", "round " + std::to_string(round) + ": " + std::to_string(still) + " still exported");
    for (const auto& cg : o.churn) mkdir(dir(o, cg).c_str(), 0755);
    sleep_s(settle);
    s = scrape(o);
    int fresh = 0;
    for (const auto& cg : o.churn)
      fresh += s.at(key("memcg_stat_reads_total", cg, "reason", "initial")) == 1 &&
               s.at(key("memcg_stat_reads_total", cg, "reason", "threshold")) == 0 &&
               s.at(key("memcg_stat_skips_total", cg)) <= 2 * settle / o.probe;
    check(fresh == static_cast<int>(o.churn.size()), "recreated-cgroups-fresh",
          std::to_string(fresh) + "/" + std::to_string(o.churn.size()));
  }
  const double fds1 = scrape(o).at("process_open_fds");
  check(fds1 <= fds0, "open-fds-flat", "before " + std::to_string(fds0) + " after " + std::to_string(fds1));
  const std::string log = read_file(o.log);
  int noisy = 0;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line))
    if (line.find("level=warning") != std::string::npos || line.find("level=error") != std::string::npos) {
      ++noisy;
      std::printf("log: %s\n", line.c_str());
    }
  check(noisy == 0, "no-log-spam", std::to_string(noisy) + " warning/error lines");
}

void report_costs(const Options& o) {
  std::vector<int> stat_fds, cur_fds;
  std::vector<std::string> stack{o.root};
  while (!stack.empty()) {
    const std::string d = stack.back();
    stack.pop_back();
    const int s = open((d + "/memory.stat").c_str(), O_RDONLY | O_CLOEXEC);
    const int c = open((d + "/memory.current").c_str(), O_RDONLY | O_CLOEXEC);
    if (s >= 0 && c >= 0) {
      stat_fds.push_back(s);
      cur_fds.push_back(c);
    } else {
      if (s >= 0) close(s);
      if (c >= 0) close(c);
    }
    if (DIR* dp = opendir(d.c_str())) {
      while (dirent* e = readdir(dp))
        if (e->d_type == DT_DIR && e->d_name[0] != '.') stack.push_back(d + "/" + e->d_name);
      closedir(dp);
    }
  }
  static char buf[16384];
  auto time_reads = [&](const std::vector<int>& fds) {
    const auto t0 = Clock::now();
    for (int i = 0; i < 10; ++i)
      for (int fd : fds)
        if (pread(fd, buf, sizeof buf, 0) < 0) perror("pread");
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / (10.0 * static_cast<double>(fds.size()));
  };
  const double cur_us = time_reads(cur_fds), stat_us = time_reads(stat_fds);
  for (int fd : stat_fds) close(fd);
  for (int fd : cur_fds) close(fd);
  const Scrape s = scrape(o);
  double reads = 0;
  for (const char* r : {"initial", "threshold", "event", "max_age", "forced"})
    reads += s.at(std::string("memcg_exporter_stat_reads_total{reason=\"") + r + "\"}");
  const double skips = s.at("memcg_exporter_stat_skips_total");
  const double hist_mean = s.at("memcg_exporter_stat_read_duration_seconds_sum") /
                           s.at("memcg_exporter_stat_read_duration_seconds_count") * 1e6;
  std::printf("VMCOST cgroups=%zu memory.stat=%.1fus memory.current=%.1fus ratio=%.1fx exporter_mean_stat_read=%.1fus "
              "reads=%.0f skips=%.0f avoided=%.1f%%\n",
              stat_fds.size(), stat_us, cur_us, stat_us / cur_us, hist_mean, reads, skips, 100.0 * skips / (reads + skips));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--port") o.port = std::atoi(v.c_str());
    else if (k == "--root") o.root = v;
    else if (k == "--log") o.log = v;
    else if (k == "--idle") o.idle = split(v, ',');
    else if (k == "--busy") o.busy = split(v, ',');
    else if (k == "--freeze") o.freeze = split(v, ',');
    else if (k == "--churn") o.churn = split(v, ',');
    else if (k == "--oom") o.oom = v;
    else if (k == "--high") o.high = v;
    else if (k == "--probe") o.probe = std::atof(v.c_str());
    else if (k == "--rescan") o.rescan = std::atof(v.c_str());
    else if (k == "--cpus") o.cpus = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "memcg-vmcheck: unknown option %s\n", k.c_str());
      return 64;
    }
  }
  wait_ready(o);
  check_freshness(o, 15);
  check_reasons(o);
  check_values(o);
  check_held_to_account(o, 20);
  check_churn(o);
  check(g_age_violations == 0, "freshness-all-scrapes",
        std::to_string(g_scrapes) + " scrapes, " + std::to_string(g_age_violations) + " age > max_age");
  report_costs(o);
  std::printf("VMCHECK %s (%d failures)\n", g_failures ? "FAIL" : "PASS", g_failures);
  return g_failures ? 1 : 0;
}
