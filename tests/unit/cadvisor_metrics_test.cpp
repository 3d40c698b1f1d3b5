// The cadvisor profile: the kubelet's /metrics/cadvisor memory series under
// their names, types and labels, with cAdvisor's cgroup v2 definitions, over
// a hand-made Kubernetes node snapshot (docs/kubernetes.md has the table).
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "exporter/exposition/cadvisor_metrics.h"
#include "exporter/exposition/metrics.h"
#include "base/parse/stat_keys.h"

namespace memcg::exporter {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t MiB = 1 << 20;
const std::string kPodUid = "0d3c6a1e-5b7f-4c2d-9e8f-a1b2c3d4e5f6";
const std::string kPod = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice";
const std::string kApp(64, 'a'), kSandbox(64, 'b'), kDocker(64, 'd');

// What the kubelet serves, from cAdvisor's metrics/prometheus.go: every
// memory series the profile must serve, with its type. container_memory_failcnt
// is cgroup v1's memory.failcnt, which has no v2 counterpart (cAdvisor
// serves 0): left out.
const std::map<std::string, MetricType> kKubeletMemoryFamily = {
    {"container_memory_usage_bytes", MetricType::Gauge},
    {"container_memory_working_set_bytes", MetricType::Gauge},
    {"container_memory_rss", MetricType::Gauge},
    {"container_memory_cache", MetricType::Gauge},
    {"container_memory_swap", MetricType::Gauge},
    {"container_memory_mapped_file", MetricType::Gauge},
    {"container_memory_kernel_usage", MetricType::Gauge},
    {"container_memory_max_usage_bytes", MetricType::Gauge},
    {"container_memory_failures_total", MetricType::Counter},
    {"container_oom_events_total", MetricType::Counter},
    {"container_spec_memory_limit_bytes", MetricType::Gauge},
    {"container_spec_memory_reservation_limit_bytes", MetricType::Gauge},
    {"container_spec_memory_swap_limit_bytes", MetricType::Gauge},
    {"container_pressure_memory_waiting_seconds_total", MetricType::Counter},
    {"container_pressure_memory_stalled_seconds_total", MetricType::Counter},
};

struct Node {
  Snapshot snap;
  std::shared_ptr<runtime::BoundRecords> records = std::make_shared<runtime::BoundRecords>();
  std::shared_ptr<config::Settings> settings = std::make_shared<config::Settings>();
  uint64_t inode = 100;

  CgroupView& add(const std::string& path, runtime::Identity identity, uint64_t current, uint64_t inactive_file) {
    auto id = std::make_shared<CgroupId>(CgroupId{path, inode++, 1, std::move(identity)});
    CgroupView& v = snap.add_cgroup(id, settings);
    if (path != "/") v.probe.current = current;
    v.probe.swap = 0;
    auto rec = std::make_shared<StatRecord>();
    auto values = std::make_shared<parse::StatValues>();
    rec->values = values;
    const auto set = [&](std::string_view key, uint64_t value) {
      const size_t k = *parse::stat_key_table().find(key);
      values->present.set(k);
      values->values[k] = value;
    };
    set("anon", current / 2);
    set("file", current / 4);
    set("file_mapped", MiB);
    set("inactive_file", inactive_file);
    set("pgfault", 1000);
    set("pgmajfault", 7);
    if (path != "/") {
      rec->limits[lim_max] = parse::SingleValue{256 * MiB, false};
      rec->limits[lim_min] = parse::SingleValue{0, false};
      rec->limits[lim_swap_max] = parse::SingleValue{0, true};
    }
    rec->peak = current + MiB;
    v.stat = rec;
    auto ev = std::make_shared<MemoryEvents>();
    for (size_t k = 0; k <= parse::ev_oom_group_kill; ++k) ev->events.present.set(k);
    ev->events.values[parse::ev_oom_kill] = 2;
    v.probe.events = ev;
    return v;
  }
  void record(const std::string& cgroup, runtime::ContainerRecord r) {
    snap.records = records;
    const std::string id = r.id;
    records->emplace(id, runtime::BoundRecord{std::move(r), 0, cgroup});
  }
};

runtime::Identity container(std::string runtime, std::string id, std::string pod_uid = "") {
  runtime::Identity i;
  i.runtime = std::move(runtime);
  i.container_id = std::move(id);
  i.pod_uid = std::move(pod_uid);
  return i;
}

// A node: the root, a pod with its sandbox and an app container (named by
// containerd), a Docker container, and an app container whose page cache is
// larger than its usage (its working set floors at 0).
Node kubernetes_node() {
  Node n;
  n.add("/", {}, 0, 0);
  runtime::Identity pod;
  pod.pod_uid = kPodUid;
  n.add(kPod, pod, 300 * MiB, 30 * MiB);
  n.add(kPod + "/cri-containerd-" + kSandbox + ".scope", container("containerd", kSandbox, kPodUid), 1 * MiB, 0);
  n.add(kPod + "/cri-containerd-" + kApp + ".scope", container("containerd", kApp, kPodUid), 200 * MiB, 20 * MiB);
  n.add("system.slice/docker-" + kDocker + ".scope", container("docker", kDocker), 50 * MiB, 80 * MiB);
  runtime::ContainerRecord sandbox{kSandbox, "sandbox", "registry.k8s.io/pause:3.9", "web-0", "shop", kPodUid, ""};
  sandbox.sandbox = true;
  n.record(kPod + "/cri-containerd-" + kSandbox + ".scope", sandbox);
  n.record(kPod + "/cri-containerd-" + kApp + ".scope", {kApp, "web", "docker.io/library/nginx:1.25", "web-0", "shop", kPodUid, ""});
  n.record("system.slice/docker-" + kDocker + ".scope", {kDocker, "db", "postgres:16", "", "", "", ""});
  return n;
}

std::string render(const Snapshot& snap) {
  DaemonStatus status;
  ProcessStats process;
  const ScrapeContext ctx{snap, TimePoint{} + 1h, status, process, "v", "r", {}, config::Profile::cadvisor};
  std::string out;
  render_text(ctx, out);
  return out;
}

// The value of the one sample of `name` whose labels contain every `want`.
std::optional<double> sample(const std::string& text, const std::string& name, std::initializer_list<std::string> want) {
  std::istringstream in(text);
  std::optional<double> found;
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(name + "{")) continue;
    const std::string labels = line.substr(name.size(), line.rfind(' ') - name.size());
    bool all = true;
    for (const auto& w : want) all = all && labels.find(w) != std::string::npos;
    if (!all) continue;
    EXPECT_FALSE(found) << "two samples of " << name << " match";
    found = std::stod(line.substr(line.rfind(' ') + 1));
  }
  return found;
}

std::string id_of(const std::string& path) { return "id=\"/" + path + "\""; }

TEST(CadvisorMetrics, ServesTheKubeletsMemoryFamilyByNameAndType) {
  std::map<std::string, MetricType> table;
  for (const auto& def : cadvisor_table()) {
    EXPECT_EQ(def.profile, config::Profile::cadvisor) << def.name;
    EXPECT_EQ(def.type == MetricType::Counter, def.name.ends_with("_total")) << def.name;
    table.emplace(def.name, def.type);
  }
  EXPECT_EQ(table, kKubeletMemoryFamily);
}

TEST(CadvisorMetrics, LabelsAreTheKubeletsWithCadvisorsNames) {
  const Node n = kubernetes_node();
  const std::string text = render(n.snap);
  const std::string app = kPod + "/cri-containerd-" + kApp + ".scope", sandbox = kPod + "/cri-containerd-" + kSandbox + ".scope";
  // The app container: its Kubernetes names, and containerd's alias (the id) as name.
  EXPECT_TRUE(sample(text, "container_memory_usage_bytes",
                     {"container=\"web\"", id_of(app), "image=\"docker.io/library/nginx:1.25\"", "name=\"" + kApp + "\"",
                      "namespace=\"shop\"", "pod=\"web-0\""}));
  // The sandbox: the pod's names, no container name (the kubelet's
  // container="", which Prometheus stores as no label: left out).
  EXPECT_TRUE(sample(text, "container_memory_usage_bytes", {"{" + id_of(sandbox), "image=\"registry.k8s.io/pause:3.9\"", "pod=\"web-0\""}));
  // The pod's cgroup: named after its pod, as the kubelet does; no image, no name.
  EXPECT_TRUE(sample(text, "container_memory_usage_bytes", {"{" + id_of(kPod) + ",namespace=\"shop\",pod=\"web-0\"}"}));
  // Docker: its name is the container's name.
  EXPECT_TRUE(sample(text, "container_memory_usage_bytes", {"name=\"db\"", "image=\"postgres:16\""}));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("container_")) {
      EXPECT_EQ(line.find("=\"\""), std::string::npos) << "an empty label: " << line;
    }
  // No cgroup_id: the exporter's own series are keyed by id, to join on it.
  EXPECT_EQ(text.find("cgroup_id="), std::string::npos);
  EXPECT_TRUE(sample(text, "memcg_stat_last_read_timestamp_seconds", {id_of(app) + "}"}));
  EXPECT_NE(text.find("memcg_cgroup_info{id=\"/" + app + "\""), std::string::npos);
  // The other profiles' series are not served.
  EXPECT_EQ(text.find("\nmemcg_memory_current_bytes{"), std::string::npos);
  EXPECT_EQ(text.find("\nmemcg_memory_stat_bytes{"), std::string::npos) << text;
}

TEST(CadvisorMetrics, ValuesFollowCadvisorsCgroupV2Definitions) {
  const Node n = kubernetes_node();
  const std::string text = render(n.snap);
  const std::string app = id_of(kPod + "/cri-containerd-" + kApp + ".scope");
  const std::string docker = id_of("system.slice/docker-" + kDocker + ".scope");
  EXPECT_EQ(sample(text, "container_memory_usage_bytes", {app}), 200.0 * MiB);
  EXPECT_EQ(sample(text, "container_memory_working_set_bytes", {app}), 180.0 * MiB);
  EXPECT_EQ(sample(text, "container_memory_working_set_bytes", {docker}), 0.0) << "usage < inactive_file floors at 0";
  EXPECT_EQ(sample(text, "container_memory_rss", {app}), 100.0 * MiB);
  EXPECT_EQ(sample(text, "container_memory_cache", {app}), 50.0 * MiB);
  EXPECT_EQ(sample(text, "container_memory_mapped_file", {app}), 1.0 * MiB);
  EXPECT_EQ(sample(text, "container_memory_swap", {app}), 0.0);
  EXPECT_EQ(sample(text, "container_memory_kernel_usage", {app}), 0.0);
  EXPECT_FALSE(sample(text, "container_memory_failcnt", {app}));
  EXPECT_EQ(sample(text, "container_memory_max_usage_bytes", {app}), 201.0 * MiB);
  EXPECT_EQ(sample(text, "container_memory_failures_total", {app, "failure_type=\"pgmajfault\"", "scope=\"hierarchy\""}), 7.0);
  EXPECT_EQ(sample(text, "container_memory_failures_total", {app, "failure_type=\"pgfault\"", "scope=\"container\""}), 1000.0);
  EXPECT_EQ(sample(text, "container_oom_events_total", {app}), 2.0);
  EXPECT_EQ(sample(text, "container_spec_memory_limit_bytes", {app}), 256.0 * MiB);
  EXPECT_EQ(sample(text, "container_spec_memory_reservation_limit_bytes", {app}), 0.0);
  EXPECT_EQ(sample(text, "container_spec_memory_swap_limit_bytes", {app}), 0.0) << "unlimited is 0";
  // The root has no memory.current and no limit files.
  EXPECT_FALSE(sample(text, "container_memory_usage_bytes", {"{id=\"/\"}"}));
  EXPECT_FALSE(sample(text, "container_spec_memory_limit_bytes", {"{id=\"/\"}"}));
  EXPECT_TRUE(sample(text, "container_memory_rss", {"{id=\"/\"}"}));
}

TEST(CadvisorMetrics, SeriesBudgetCountsTheCompatTable) {
  config::Settings s;
  s.stats = config::StatFilter::defaults(config::Profile::cadvisor);
  const SeriesBudget b = series_per_cgroup(s, config::Profile::cadvisor);
  // 14 families of one series, failures_total four, memcg_cgroup_info and
  // memcg_stat_last_read_timestamp_seconds.
  EXPECT_EQ(b.most, 14u + 4u + 2u);
}

}  // namespace
}  // namespace memcg::exporter
