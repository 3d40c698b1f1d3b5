// containerd's API as a source of names: the record a container gives (pure),
// and the client against a real gRPC server on a Unix socket that answers
// well, slowly, hugely, with hostile input, goes away and comes back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "github.com/containerd/containerd/api/events/container.pb.h"
#include "github.com/containerd/containerd/api/services/containers/v1/containers.grpc.pb.h"
#include "github.com/containerd/containerd/api/services/events/v1/events.grpc.pb.h"
#include "plugin/runtime/containerd_client.h"
#include "plugin/runtime/containerd_record.h"
#include "plugin/runtime/identity_sources.h"
#include "plugin/runtime/lookup_worker.h"
#include "tests/fixtures/fake_containerd.h"

namespace memcg::runtime {
namespace {

using fixtures::FakeContainerd;


const std::string kApp = "3c5e8d1f0a2b4c6d8e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d";
const std::string kPause = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0";
const std::string kPodUid = "0d3c6a1e-5b7f-4c2d-9e8f-a1b2c3d4e5f6";
const std::string kSpecType = "types.containerd.io/opencontainers/runtime-spec/1/Spec";

std::string spec_json(const std::string& cgroups_path, const std::string& annotations = "{}") {
  return R"({"ociVersion":"1.0.2","annotations":)" + annotations + R"(,"linux":{"cgroupsPath":")" + cgroups_path + R"("}})";
}

ContainerdContainer app_container() {
  return {kApp, "docker.io/library/nginx:1.25",
          {{"io.kubernetes.container.name", "web"}, {"io.kubernetes.pod.name", "web-0"},
           {"io.kubernetes.pod.namespace", "shop"}, {"io.kubernetes.pod.uid", kPodUid},
           {"io.cri-containerd.kind", "container"}},
          kSpecType, spec_json("kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice:cri-containerd:" + kApp)};
}

TEST(ContainerdRecord, AKubernetesContainerIsNamedFromTheCriLabelsAndBoundByItsSpec) {
  std::string error;
  auto r = containerd_record(app_container(), error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->id, kApp);
  EXPECT_EQ(r->name, "web");
  EXPECT_EQ(r->pod, "web-0");
  EXPECT_EQ(r->namespace_, "shop");
  EXPECT_EQ(r->pod_uid, kPodUid);
  EXPECT_EQ(r->image, "docker.io/library/nginx:1.25");
  EXPECT_EQ(r->cgroups_path, "kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice:cri-containerd:" + kApp);
  EXPECT_TRUE(cgroups_path_names(r->cgroups_path, "kubepods.slice/kubepods-burstable.slice/"
                                                 "kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice/"
                                                 "cri-containerd-" + kApp + ".scope"));
}

TEST(ContainerdRecord, TheSandboxIsNamedAfterItsKindAndNerdctlContainersByTheirName) {
  std::string error;
  ContainerdContainer pause{kPause, "registry.k8s.io/pause:3.6",
                            {{"io.kubernetes.pod.name", "web-0"}, {"io.kubernetes.pod.namespace", "shop"},
                             {"io.kubernetes.pod.uid", kPodUid}, {"io.cri-containerd.kind", "sandbox"}},
                            kSpecType, spec_json("/kubepods/burstable/pod" + kPodUid + "/" + kPause)};
  auto r = containerd_record(pause, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->name, "sandbox");
  EXPECT_TRUE(r->sandbox) << "the kubelet gives it no container name";
  EXPECT_EQ(r->pod, "web-0");
  EXPECT_EQ(r->cgroups_path, "/kubepods/burstable/pod" + kPodUid + "/" + kPause);
  ContainerdContainer nerdctl{"nginx-1", "docker.io/library/nginx:alpine", {{"nerdctl/name", "nginx-1"}}, kSpecType,
                              spec_json("/default/nginx-1")};
  r = containerd_record(nerdctl, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->name, "nginx-1");
  EXPECT_EQ(r->pod, "");
  EXPECT_FALSE(r->sandbox);
}

TEST(ContainerdRecord, HostileContainersNameNothing) {
  std::string error;
  ContainerdContainer c = app_container();
  c.id = "../../etc";
  EXPECT_FALSE(containerd_record(c, error));
  c = app_container();
  c.spec = std::string(5 << 20, ' ') + "{}";  // beyond kMaxConfigBytes
  EXPECT_FALSE(containerd_record(c, error));
  c.spec = std::string(100, '[') + std::string(100, ']');
  EXPECT_FALSE(containerd_record(c, error));
  c = app_container();
  c.labels = {{"io.kubernetes.container.name", std::string("we\x01" "b\xff") + std::string(400, 'x')}};
  auto r = containerd_record(c, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name.substr(0, 3), "web");  // control characters and broken UTF-8 dropped
  EXPECT_LE(r->name.size(), kMaxValueBytes);
  c.spec_type = "types.example/not-a-spec";  // only an OCI spec is read for its cgroup
  r = containerd_record(c, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->cgroups_path, "");
}

std::string temp_socket(const char* name) {
  return (std::filesystem::temp_directory_path() / ("memcg-containerd-" + std::to_string(::getpid()) + "-" + name)).string();
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

ContainerdContainer container(const std::string& id, const std::string& name) {
  ContainerdContainer c = app_container();
  c.id = id;
  c.labels[0].second = name;
  c.spec = spec_json("/kubepods/burstable/pod" + kPodUid + "/" + id);
  return c;
}

TEST(ContainerdClient, ListsAtStartThenFollowsCreateAndDeleteEvents) {
  const std::string sock = temp_socket("events");
  FakeContainerd containerd(sock);
  containerd.add("k8s.io", container(kPause, "first"), false);
  containerd.add("default", container(kApp, "elsewhere"), false);  // a namespace not asked for
  LookupWorker worker;
  ContainerdClient client({.socket = sock}, worker);
  ASSERT_TRUE(eventually([&] { return client.records()->size() == 1 && client.stats().connected; }));
  EXPECT_EQ(client.records()->at(kPause).name, "first");
  const int lists = containerd.lists;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the subscription settle
  containerd.add("k8s.io", container(kApp, "second"));
  ASSERT_TRUE(eventually([&] { return client.records()->count(kApp) == 1; }));
  EXPECT_EQ(client.records()->at(kApp).name, "second");
  containerd.remove("k8s.io", kPause);
  ASSERT_TRUE(eventually([&] { return client.records()->count(kPause) == 0; }));
  EXPECT_EQ(containerd.lists, lists);  // events, not lists: no polling
  const ContainerdStats s = client.stats();
  EXPECT_EQ(s.lookups[0], 1u);
  EXPECT_EQ(s.events, 2u);
  EXPECT_TRUE(client.take_errors().empty());
}

TEST(ContainerdClient, AnAbsentSocketIsOneErrorAndNotConnectedThenRecoversWhenContainerdStarts) {
  const std::string sock = temp_socket("late");
  ::unlink(sock.c_str());
  LookupWorker worker;
  ContainerdClient client({.socket = sock, .retry = std::chrono::milliseconds(200)}, worker);
  ASSERT_TRUE(eventually([&] { return client.stats().lists_failed >= 2; }));
  EXPECT_FALSE(client.stats().connected);
  auto errors = client.take_errors();
  ASSERT_EQ(errors.size(), 1u);  // once per failing spell, not per attempt
  EXPECT_EQ(errors[0].err, ENOENT);
  FakeContainerd containerd(sock);
  containerd.add("k8s.io", container(kApp, "late"), false);
  ASSERT_TRUE(eventually([&] { return client.records()->size() == 1 && client.stats().connected; }));
  // containerd restarted under the client: it reconnects and lists again.
  containerd.stop();
  containerd.start();
  containerd.add("k8s.io", container(kPause, "after-restart"), false);
  ASSERT_TRUE(eventually([&] { return client.records()->size() == 2; }));
}

TEST(ContainerdClient, ASlowContainerdNeverHoldsTheWorkerPastItsDeadlineAndStopsAtOnce) {
  const std::string sock = temp_socket("slow");
  FakeContainerd containerd(sock);
  std::atomic<bool> slow{true};
  containerd.before_answer = [&] {
    while (slow) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  auto worker = std::make_unique<LookupWorker>();
  auto client = std::make_unique<ContainerdClient>(
      ContainerdClient::Options{.socket = sock, .timeout = std::chrono::milliseconds(100), .retry = std::chrono::seconds(30)},
      *worker);
  ASSERT_TRUE(eventually([&] { return client->stats().lists_failed == 1; }, std::chrono::seconds(5)));
  EXPECT_EQ(client->take_errors().at(0).err, ETIMEDOUT);
  // Stopping while a call waits on containerd takes no deadline.
  client.reset();
  const auto t0 = std::chrono::steady_clock::now();
  worker.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  slow = false;
}

TEST(ContainerdClient, HugeOrHostileAnswersNameNothingAndStayBounded) {
  const std::string sock = temp_socket("hostile");
  FakeContainerd containerd(sock);
  ContainerdContainer huge = container(kApp, "huge");
  huge.spec = spec_json("/x", "{\"pad\":\"" + std::string(2 << 20, 'a') + "\"}");  // a 2 MiB message
  containerd.add("k8s.io", huge, false);
  LookupWorker worker;
  ContainerdClient client({.socket = sock, .retry = std::chrono::milliseconds(100)}, worker);
  ASSERT_TRUE(eventually([&] { return client.stats().lists_failed >= 1; }));
  EXPECT_EQ(client.take_errors().at(0).err, EMSGSIZE);
  EXPECT_TRUE(client.records()->empty());
  // Replaced by hostile but small ones: a bad id, a spec that is not JSON.
  containerd.remove("k8s.io", kApp);
  ContainerdContainer bad = container("../x", "bad");
  containerd.add("k8s.io", bad, false);
  ContainerdContainer garbage = container(kPause, "garbage");
  garbage.spec = "{\"linux\":";
  containerd.add("k8s.io", garbage, false);
  ASSERT_TRUE(eventually([&] { return client.stats().lists_ok >= 1; }));
  EXPECT_TRUE(client.records()->empty());
}

TEST(ContainerdClient, KeepsAtMostMaxEntriesContainers) {
  const std::string sock = temp_socket("many");
  FakeContainerd containerd(sock);
  for (int i = 0; i < 50; ++i) containerd.add("k8s.io", container("c" + std::to_string(i), "n"), false);
  LookupWorker worker;
  ContainerdClient client({.socket = sock, .max_entries = 20}, worker);
  ASSERT_TRUE(eventually([&] { return client.stats().lists_ok == 1; }));
  EXPECT_EQ(client.records()->size(), 20u);
}

TEST(ContainerdClient, ItsRecordsLabelOnlyTheCgroupTheirSpecNames) {
  const std::string sock = temp_socket("bind");
  FakeContainerd containerd(sock);
  containerd.add("k8s.io", app_container(), false);
  IdentitySources sources;
  SourcesConfig config;
  config.records_dir = "";
  config.containerd_socket = sock;
  config.containerd_namespaces = {"k8s.io"};
  sources.configure(config);
  const std::string pod = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice";
  const std::string real = pod + "/cri-containerd-" + kApp + ".scope";
  // A look-alike: a cgroup named after the container inside another one.
  const std::string fake = pod + "/cri-containerd-" + kPause + ".scope/cri-containerd-" + kApp + ".scope";
  const ForEachContainerCgroup cgroups = [&](const std::function<void(const BindCandidate&)>& f) {
    f({real, 4, kApp, "containerd"});
    f({fake, 5, kApp, "containerd"});
  };
  std::vector<IoError> errors;
  const TimePoint t0{std::chrono::hours(1)};
  ASSERT_TRUE(eventually([&] {
    sources.refresh(true, cgroups, t0, errors);
    return sources.records() && record_for(*sources.records(), kApp, real) != nullptr;
  }));
  EXPECT_EQ(record_for(*sources.records(), kApp, real)->name, "web");
  EXPECT_EQ(record_for(*sources.records(), kApp, fake), nullptr);
  ASSERT_TRUE(sources.containerd_stats());
  EXPECT_TRUE(sources.containerd_stats()->connected);
  EXPECT_TRUE(errors.empty());
}

}  // namespace
}  // namespace memcg::runtime
