#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "plugin/runtime/identity.h"
#include "plugin/runtime/identity_sources.h"
#include "plugin/runtime/oci_record.h"
#include "plugin/runtime/record_store.h"
#include "plugin/snapshot.h"

namespace memcg::runtime {

void PrintTo(const Identity& i, std::ostream* os) {
  *os << "{runtime=" << i.runtime << " id=" << i.container_id << " pod_uid=" << i.pod_uid << " qos=" << i.qos_class
      << " unit=" << i.unit << "}";
}

namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kId = "4f1a7d2c9b8e3f6a5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291807f6e";
const std::string kUid = "0d3c6a1e-5b7f-4c2d-9e8f-a1b2c3d4e5f6";
const std::string kUidU = "0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6";

struct Case {
  std::string path;
  Identity want;
};

TEST(Identify, EveryLayout) {
  const Case cases[] = {
      // Docker, systemd and cgroupfs drivers.
      {"system.slice/docker-" + kId + ".scope", {"docker", kId, "", "", "docker-" + kId + ".scope"}},
      {"docker/" + kId, {"docker", kId, "", "", ""}},
      // Kubernetes + containerd, systemd driver, each QoS class.
      {"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidU + ".slice/cri-containerd-" + kId + ".scope",
       {"containerd", kId, kUid, "burstable", "cri-containerd-" + kId + ".scope"}},
      {"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kUidU + ".slice/cri-containerd-" + kId + ".scope",
       {"containerd", kId, kUid, "besteffort", "cri-containerd-" + kId + ".scope"}},
      {"kubepods.slice/kubepods-pod" + kUidU + ".slice/cri-containerd-" + kId + ".scope",
       {"containerd", kId, kUid, "guaranteed", "cri-containerd-" + kId + ".scope"}},
      // A systemd-style cgroupsPath applied without systemd.
      {"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kUidU + ".slice:cri-containerd:" + kId,
       {"containerd", kId, kUid, "besteffort", ""}},
      // Kubernetes, cgroupfs driver.
      {"kubepods/burstable/pod" + kUid + "/" + kId, {"cri", kId, kUid, "burstable", ""}},
      {"kubepods/pod" + kUid + "/" + kId, {"cri", kId, kUid, "guaranteed", ""}},
      {"kubepods/besteffort/pod" + kUid + "/crio-" + kId, {"cri-o", kId, kUid, "besteffort", ""}},
      // CRI-O and its monitor.
      {"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidU + ".slice/crio-" + kId + ".scope",
       {"cri-o", kId, kUid, "burstable", "crio-" + kId + ".scope"}},
      {"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidU + ".slice/crio-conmon-" + kId + ".scope",
       {"systemd", "", kUid, "burstable", "crio-conmon-" + kId + ".scope"}},
      // The pod and QoS slices themselves.
      {"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidU + ".slice",
       {"systemd", "", kUid, "burstable", "kubepods-burstable-pod" + kUidU + ".slice"}},
      {"kubepods.slice/kubepods-besteffort.slice", {"systemd", "", "", "besteffort", "kubepods-besteffort.slice"}},
      // Podman: rootful, rootless, its monitor, inside a systemd service, cgroupfs.
      {"machine.slice/libpod-" + kId + ".scope", {"podman", kId, "", "", "libpod-" + kId + ".scope"}},
      {"user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId + ".scope",
       {"podman", kId, "", "", "libpod-" + kId + ".scope"}},
      {"machine.slice/libpod-conmon-" + kId + ".scope", {"systemd", "", "", "", "libpod-conmon-" + kId + ".scope"}},
      {"system.slice/container-web.service/libpod-payload-" + kId, {"podman", kId, "", "", ""}},
      {"libpod_parent/libpod-" + kId, {"podman", kId, "", "", ""}},
      // systemd-nspawn, with systemd's escaping.
      {"machine.slice/machine-web\\x2dfront.scope", {"systemd-nspawn", "web-front", "", "", "machine-web-front.scope"}},
      {"machine.slice/systemd-nspawn@build\\x2dbox.service/payload", {"systemd-nspawn", "build-box", "", "", ""}},
      // Plain systemd units and everything else.
      {"system.slice/ssh.service", {"systemd", "", "", "", "ssh.service"}},
      {"system.slice/system-getty.slice/getty@tty1.service", {"systemd", "", "", "", "getty@tty1.service"}},
      {"system.slice/foo\\x2dbar.service", {"systemd", "", "", "", "foo-bar.service"}},
      {"/", {"raw", "", "", "", ""}},
      {"work/hog", {"raw", "", "", "", ""}},
      // Negatives: near misses are not containers.
      {"system.slice/docker-notanid.scope", {"systemd", "", "", "", "docker-notanid.scope"}},
      {"system.slice/docker.service", {"systemd", "", "", "", "docker.service"}},
      {"docker/abc", {"raw", "", "", "", ""}},
      {"system.slice/docker-" + kId.substr(0, 11) + ".scope", {"systemd", "", "", "", "docker-" + kId.substr(0, 11) + ".scope"}},
      {"kubepods/burstable/podnot-a-uid/" + kId, {"raw", "", "", "burstable", ""}},
      {"machine.slice/machine.scope", {"systemd", "", "", "", "machine.scope"}},
      {"//", {"raw", "", "", "", ""}},  // no component at all (found by fuzzing)
      // Not a machine name systemd-machined would register (found by fuzzing:
      // unbounded, arbitrary bytes): a plain unit.
      {"machine.slice/machine-a\\xffb.scope", {"systemd", "", "", "", "machine-a\xff" "b.scope"}},
      {"machine.slice/machine-" + std::string(65, 'm') + ".scope", {"systemd", "", "", "", "machine-" + std::string(65, 'm') + ".scope"}},
  };
  for (const auto& c : cases) EXPECT_EQ(identify(c.path), c.want) << c.path;
}

TEST(Identify, Helpers) {
  EXPECT_EQ(unescape_unit("a\\x2db\\x5cc\\x2"), "a-b\\c\\x2");
  EXPECT_EQ(canonical_uuid("0D3C6A1E_5B7F_4C2D_9E8F_A1B2C3D4E5F6"), kUid);
  EXPECT_EQ(canonical_uuid("0d3c6a1e-5b7f-4c2d-9e8f-a1b2c3d4e5f"), "");
  EXPECT_EQ(canonical_uuid("0d3c6a1e-5b7f-4c2d-9e8f-a1b2c3d4e5fg"), "");
  EXPECT_TRUE(is_container_id(kId));
  EXPECT_FALSE(is_container_id(kId + "0"));
  EXPECT_FALSE(is_container_id("ABCDEF012345"));
}

// --- the OCI hook ---------------------------------------------------------

std::string state_json(const std::string& id, const std::string& bundle, const std::string& extra = "") {
  return R"({"ociVersion":"1.0.2","id":")" + id + R"(","status":"creating","pid":4242,"bundle":")" + bundle + "\"" +
         extra + "}";
}

class HookTest : public ::testing::Test {
 protected:
  HookTest() {
    base = fs::temp_directory_path() / ("memcg-hook-" + std::to_string(::getpid()));
    fs::create_directories(base / "bundle");
    dir = (base / "records").string();
  }
  ~HookTest() override { fs::remove_all(base); }
  void write_config(const std::string& body) { std::ofstream(base / "bundle" / "config.json") << body; }
  std::string bundle() const { return (base / "bundle").string(); }
  fs::path base;
  std::string dir;
};

const char* kCrioConfig = R"({
  "ociVersion": "1.0.2",
  "process": {"args": ["nginx"]},
  "linux": {"cgroupsPath": "kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice:crio:4f1a"},
  "annotations": {
    "io.kubernetes.container.name": "web",
    "io.kubernetes.cri-o.ImageName": "docker.io/library/nginx:1.25",
    "io.kubernetes.pod.name": "web-7d4b9c",
    "io.kubernetes.pod.namespace": "shop",
    "io.kubernetes.pod.uid": "0d3c6a1e-5b7f-4c2d-9e8f-a1b2c3d4e5f6"
  }
})";

TEST_F(HookTest, CreateWritesARecordAndPoststopRemovesIt) {
  write_config(kCrioConfig);
  EXPECT_EQ(run_hook("createRuntime", state_json(kId, bundle()), dir), "");
  const std::string path = dir + "/" + kId + ".json";
  ASSERT_TRUE(fs::exists(path));
  const std::string body = slurp(path);
  std::string err;
  auto rec = parse_record(body, err);
  ASSERT_TRUE(rec) << err;
  EXPECT_EQ(*rec, (ContainerRecord{kId, "web", "docker.io/library/nginx:1.25", "web-7d4b9c", "shop", kUid,
                                   "kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice:crio:4f1a"}));
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_NE(e.path().filename().string()[0], '.') << "temp file left";
  EXPECT_EQ(run_hook("poststop", state_json(kId, bundle()), dir), "");
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(run_hook("poststop", state_json(kId, bundle()), dir), "") << "a second poststop is fine";
}

TEST_F(HookTest, CriOsSandboxIsRecordedAsTheSandboxAndReadBack) {
  write_config(R"({"linux":{"cgroupsPath":"kubepods-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice:crio:5e2b"},
                  "annotations":{"io.kubernetes.cri-o.ContainerType":"sandbox","io.kubernetes.pod.name":"web-0",
                  "io.kubernetes.pod.namespace":"shop"}})");
  EXPECT_EQ(run_hook("createRuntime", state_json("5e2b", bundle()), dir), "");
  std::string err;
  auto rec = parse_record(slurp(dir + "/5e2b.json"), err);
  ASSERT_TRUE(rec) << err;
  EXPECT_TRUE(rec->sandbox);
  EXPECT_EQ(rec->pod, "web-0");
  // An application container's record says nothing of it: records written
  // before the field existed read the same.
  write_config(kCrioConfig);
  EXPECT_EQ(run_hook("createRuntime", state_json(kId, bundle()), dir), "");
  const std::string body = slurp(dir + "/" + kId + ".json");
  EXPECT_EQ(body.find("sandbox"), std::string::npos) << body;
  rec = parse_record(body, err);
  ASSERT_TRUE(rec) << err;
  EXPECT_FALSE(rec->sandbox);
}

TEST_F(HookTest, StateAnnotationsAndContainerdKeys) {
  write_config(R"({"annotations":{"io.kubernetes.cri.container-name":"db","io.kubernetes.cri.image-name":"postgres:16",
                  "io.kubernetes.cri.sandbox-name":"db-0","io.kubernetes.cri.sandbox-namespace":"data"}})");
  EXPECT_EQ(run_hook("createRuntime", state_json("abc", bundle(), R"(,"annotations":{"io.kubernetes.container.name":"primary"})"), dir), "");
  const std::string body = slurp(dir + "/abc.json");
  std::string err;
  auto rec = parse_record(body, err);
  ASSERT_TRUE(rec) << err;
  EXPECT_EQ(rec->name, "primary") << "the state's annotations win";
  EXPECT_EQ(rec->image, "postgres:16");
  EXPECT_EQ(rec->pod, "db-0");
  EXPECT_EQ(rec->namespace_, "data");
}

TEST_F(HookTest, HostileIdsNeverEscapeTheDirectory) {
  write_config(kCrioConfig);
  const std::vector<std::string> hostile{"../escape", "a/b", "..", ".", ".hidden", "", std::string(129, 'a'),
                                        std::string("nul\0x", 5), "sp ace", "new\nline"};
  for (const std::string& id : hostile) {
    std::string state = state_json(id, bundle());
    const std::string msg = run_hook("createRuntime", state, dir);
    EXPECT_NE(msg.find("ignored"), std::string::npos) << "id " << id;
    EXPECT_EQ(run_hook("poststop", state, dir).find("unlink"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(base / "escape.json"));
  EXPECT_TRUE(!fs::exists(dir) || fs::is_empty(dir));
  EXPECT_FALSE(valid_container_id("a/../b"));
  EXPECT_TRUE(valid_container_id("web-1.example_2"));
}

TEST_F(HookTest, BadInputIsIgnoredNotFatal) {
  write_config(kCrioConfig);
  const std::string ok = state_json(kId, bundle());
  EXPECT_NE(run_hook("createRuntime", ok.substr(0, ok.size() / 2), dir).find("not a JSON object"), std::string::npos);
  EXPECT_NE(run_hook("createRuntime", "[1,2,3]", dir).find("ignored"), std::string::npos);
  EXPECT_NE(run_hook("createRuntime", std::string(70000, ' ') + ok, dir).find("larger than"), std::string::npos);
  EXPECT_NE(run_hook("createRuntime", "{\"id\":\"x\",\"a\":" + std::string(100, '[') + std::string(100, ']') + "}", dir)
                .find("nested deeper"), std::string::npos);
  EXPECT_NE(run_hook("bogusStage", ok, dir).find("unknown hook stage"), std::string::npos);
  EXPECT_NE(run_hook("createRuntime", state_json(kId, "relative/bundle"), dir).find("absolute"), std::string::npos);
  EXPECT_NE(run_hook("createRuntime", state_json(kId, "/nonexistent"), dir).find("open"), std::string::npos);
  write_config("{\"annotations\": {\"io.kubernetes.container.name\": 5");  // truncated
  EXPECT_NE(run_hook("createRuntime", ok, dir).find("config.json"), std::string::npos);
  // config.json as a symlink is not followed.
  fs::remove(base / "bundle" / "config.json");
  std::ofstream(base / "real.json") << kCrioConfig;
  fs::create_symlink(base / "real.json", base / "bundle" / "config.json");
  EXPECT_NE(run_hook("createRuntime", ok, dir).find("open"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/" + kId + ".json"));
}

TEST_F(HookTest, HugeAnnotationsAreCutAndControlCharactersDropped) {
  write_config("{\"annotations\":{\"io.kubernetes.container.name\":\"" + std::string(100000, 'n') +
               "\",\"io.kubernetes.pod.name\":\"bad\\u0007pod\\n\"}}");
  EXPECT_EQ(run_hook("createRuntime", state_json(kId, bundle()), dir), "");
  const std::string body = slurp(dir + "/" + kId + ".json");
  EXPECT_LE(body.size(), kMaxRecordBytes);
  std::string err;
  auto rec = parse_record(body, err);
  ASSERT_TRUE(rec) << err;
  EXPECT_EQ(rec->name.size(), kMaxValueBytes);
  EXPECT_EQ(rec->pod, "badpod");
}

TEST_F(HookTest, ValuesAreCutAtCharacterBoundaries) {
  // 252 ASCII bytes then a 2-byte character: cutting at 253 bytes would split
  // it and leave a record that cannot be written as JSON (found by fuzzing).
  write_config("{\"annotations\":{\"io.kubernetes.container.name\":\"" + std::string(252, 'n') +
               "\xd7\xa3tail\"}}");
  EXPECT_EQ(run_hook("createRuntime", state_json(kId, bundle()), dir), "");
  std::string err;
  auto rec = parse_record(slurp(dir + "/" + kId + ".json"), err);
  ASSERT_TRUE(rec) << err;
  EXPECT_EQ(rec->name, std::string(252, 'n'));
}

TEST_F(HookTest, RecordsDirAsSymlinkIsRefused) {
  write_config(kCrioConfig);
  fs::create_directories(base / "elsewhere");
  fs::create_symlink(base / "elsewhere", dir);
  EXPECT_NE(run_hook("createRuntime", state_json(kId, bundle()), dir).find("open"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(base / "elsewhere"));
  // poststop neither: a records dir swapped for a symlink must not make the
  // (root-run) hook unlink <id>.json wherever it points.
  std::ofstream(base / "elsewhere" / (std::string(kId) + ".json")) << "{}";
  EXPECT_NE(run_hook("poststop", state_json(kId, bundle()), dir).find("open"), std::string::npos);
  EXPECT_TRUE(fs::exists(base / "elsewhere" / (std::string(kId) + ".json")));
}

// --- the daemon's record store -------------------------------------------

TEST_F(HookTest, StoreSeesRecordsAsTheyComeAndGo) {
  write_config(kCrioConfig);
  fs::create_directories(dir);
  RecordStore store(dir);
  std::vector<IoError> errors;
  store.refresh(true, errors);
  EXPECT_TRUE(store.records()->empty());
  run_hook("createRuntime", state_json(kId, bundle()), dir);
  store.refresh(false, errors);  // inotify, no rescan needed
  ASSERT_EQ(store.records()->count(kId), 1u);
  EXPECT_EQ(store.records()->at(kId).name, "web");
  auto held = store.records();
  run_hook("poststop", state_json(kId, bundle()), dir);
  store.refresh(false, errors);
  EXPECT_TRUE(store.records()->empty());
  EXPECT_EQ(held->count(kId), 1u) << "a published map never changes";
  std::ofstream(dir + "/broken.json") << "{not json";
  std::ofstream(dir + "/other.json") << render_record({"mismatch", "", "", "", "", "", ""});
  store.refresh(false, errors);
  EXPECT_EQ(errors.size(), 2u);
  EXPECT_TRUE(store.records()->empty());
  EXPECT_TRUE(errors.empty() || errors[0].path.starts_with(dir));
}

TEST_F(HookTest, StoreExpiresRecordsOfVanishedContainers) {
  write_config(kCrioConfig);
  run_hook("createRuntime", state_json(kId, bundle()), dir);
  run_hook("createRuntime", state_json("alive", bundle()), dir);
  RecordStore store(dir);
  std::vector<IoError> errors;
  store.refresh(true, errors);
  ASSERT_EQ(store.records()->size(), 2u);
  const TimePoint t0 = TimePoint{} + std::chrono::hours(1);
  store.expire({"alive"}, t0, std::chrono::seconds(30));
  store.expire({"alive"}, t0 + std::chrono::seconds(29), std::chrono::seconds(30));
  EXPECT_EQ(store.records()->size(), 2u) << "within the grace period";
  store.expire({"alive"}, t0 + std::chrono::seconds(30), std::chrono::seconds(30));
  EXPECT_EQ(store.records()->size(), 1u);
  EXPECT_FALSE(fs::exists(dir + "/" + kId + ".json")) << "the stale file is removed";
  EXPECT_TRUE(fs::exists(dir + "/alive.json"));
}

// Every rescan rebinds the records to the cgroups. When nothing changed the
// outputs keep the very map they had: the scrape's compressed identity head
// is keyed on it, and a new map every rescan (10 s, below Prometheus' 15 s)
// made every scrape render and compress the head again.
TEST_F(HookTest, ARescanThatFindsTheSameContainersKeepsTheBoundRecords) {
  fs::create_directories(dir);
  const std::string pod = "kubepods-burstable-pod" + kUidU + ".slice";
  const std::string cgroup = "kubepods.slice/kubepods-burstable.slice/" + pod + "/crio-" + kId + ".scope";
  std::ofstream(dir + "/" + kId + ".json") << render_record({kId, "web", "nginx", "web-1", "shop", kUid, pod + ":crio:" + kId});
  IdentitySources sources;
  SourcesConfig config;
  config.records_dir = dir;
  sources.configure(config);
  std::vector<BindCandidate> live = {{cgroup, 4, kId, "crio"}};
  const ForEachContainerCgroup cgroups = [&](const std::function<void(const BindCandidate&)>& f) {
    for (const BindCandidate& c : live) f(c);
  };
  std::vector<IoError> errors;
  const TimePoint t0{std::chrono::hours(1)};
  sources.refresh(true, cgroups, t0, errors);
  const auto first = sources.records();
  ASSERT_TRUE(first);
  ASSERT_NE(record_for(*first, kId, cgroup), nullptr);
  EXPECT_EQ(record_for(*first, kId, cgroup)->name, "web");

  for (int i = 1; i <= 3; ++i) sources.refresh(true, cgroups, t0 + std::chrono::seconds(10 * i), errors);
  EXPECT_EQ(sources.records(), first) << "the same containers: the same map";

  live.clear();  // the container's cgroup went: its record no longer binds
  sources.refresh(true, cgroups, t0 + std::chrono::seconds(40), errors);
  ASSERT_TRUE(sources.records());
  EXPECT_NE(sources.records(), first);
  EXPECT_EQ(record_for(*sources.records(), kId, cgroup), nullptr);
  EXPECT_NE(record_for(*first, kId, cgroup), nullptr) << "a published map never changes";
  EXPECT_TRUE(errors.empty());
}

}  // namespace
}  // namespace memcg::runtime

namespace memcg::runtime {
namespace {

// A record names one cgroup: the one its cgroupsPath says, in the systemd
// and the cgroupfs notation of each runtime.
TEST(CgroupsPath, ARecordNamesOnlyTheCgroupItsPathSays) {
  const std::string v = std::string(64, 'b'), a = std::string(64, 'a');
  const std::string pod = "kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice";
  const std::string k8s = "kubepods.slice/kubepods-burstable.slice/" + pod + "/cri-containerd-" + v + ".scope";
  EXPECT_TRUE(cgroups_path_names(pod + ":cri-containerd:" + v, k8s));
  EXPECT_TRUE(cgroups_path_names("machine.slice:libpod:" + v, "machine.slice/libpod-" + v + ".scope"));
  EXPECT_TRUE(cgroups_path_names("user.slice:libpod:" + v,  // rootless podman under the user's manager
                                 "user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + v + ".scope"));
  EXPECT_TRUE(cgroups_path_names(pod + ":crio:" + v, "kubepods.slice/kubepods-burstable.slice/" + pod + "/crio-" + v + ".scope"));
  EXPECT_TRUE(cgroups_path_names("/libpod_parent/libpod-" + v, "libpod_parent/libpod-" + v));            // cgroupfs
  EXPECT_TRUE(cgroups_path_names("/kubepods/burstable/pod1/" + v, "kubepods/burstable/pod1/" + v));
  EXPECT_TRUE(cgroups_path_names("/kubepods/burstable/pod1/" + v, "nested/root/kubepods/burstable/pod1/" + v));
  EXPECT_TRUE(cgroups_path_names(pod + ":cri-containerd:" + v, "kubepods.slice/" + pod + ":cri-containerd:" + v));  // literal
  EXPECT_TRUE(cgroups_path_names("", k8s)) << "no cgroupsPath: cannot be checked";

  // Look-alikes: the victim's id as a child of another container, of another
  // slice, or a prefix of a longer name.
  EXPECT_FALSE(cgroups_path_names("machine.slice:libpod:" + v,
                                  "machine.slice/libpod-" + a + ".scope/libpod-" + v + ".scope"));
  EXPECT_FALSE(cgroups_path_names("machine.slice:libpod:" + v, "evil.slice/libpod-" + v + ".scope"));
  EXPECT_FALSE(cgroups_path_names("machine.slice:libpod:" + v, "xmachine.slice/libpod-" + v + ".scope"));
  EXPECT_FALSE(cgroups_path_names(pod + ":cri-containerd:" + v, k8s + "/cri-containerd-" + v + ".scope"));
  EXPECT_FALSE(cgroups_path_names("/libpod_parent/libpod-" + v, "libpod_parent/libpod-" + a + "/libpod_parent/libpod-" + v + "x"));
  EXPECT_FALSE(cgroups_path_names("/kubepods/burstable/pod1/" + v, "kubepods/burstable/pod1/" + v + "/" + v));
  EXPECT_FALSE(cgroups_path_names("a:b", k8s)) << "malformed";
}

}  // namespace
}  // namespace memcg::runtime

namespace memcg {
namespace {

// The impersonation tree: a cgroup nested under container A, named like
// container V's scope, gets V's id from its path but none of V's labels.
TEST(CgroupsPath, ANestedLookAlikeGetsPathLabelsOnly) {
  const std::string v = std::string(64, 'b'), a = std::string(64, 'a');
  runtime::RecordMap hooks;
  hooks[v] = runtime::ContainerRecord{v, "victim", "secret:1", "pod-v", "ns-v", "", "machine.slice:libpod:" + v};
  const CgroupId real{"machine.slice/libpod-" + v + ".scope", 10, 2, runtime::identify("machine.slice/libpod-" + v + ".scope")};
  const std::string nested = "machine.slice/libpod-" + a + ".scope/libpod-" + v + ".scope";
  const CgroupId impostor{nested, 11, 3, runtime::identify(nested)};
  ASSERT_EQ(impostor.identity.container_id, v);
  const runtime::BindCandidate cgroups[] = {
      {impostor.path, impostor.depth, impostor.identity.container_id, impostor.identity.runtime},
      {real.path, real.depth, real.identity.container_id, real.identity.runtime}};
  Snapshot snap;
  snap.records = std::make_shared<runtime::BoundRecords>(runtime::bind_records(cgroups, &hooks, {}));
  EXPECT_EQ(snap.identity(real, "container_name"), "victim");
  EXPECT_EQ(snap.identity(real, "image"), "secret:1");
  for (const char* label : {"container_name", "image", "pod", "namespace"}) EXPECT_EQ(snap.identity(impostor, label), "") << label;
  EXPECT_EQ(snap.identity(impostor, "container_id"), v) << "what its own path says stays";
}

}  // namespace
}  // namespace memcg
