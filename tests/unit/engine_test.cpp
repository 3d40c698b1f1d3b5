// The Engine API client: the reply framing and inspect parsing (pure), the
// merge with hook records, and the client against real Unix-socket servers
// that answer well, not at all, slowly, with garbage, or go away.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "plugin/runtime/engine_api.h"
#include "plugin/runtime/engine_client.h"
#include "plugin/runtime/lookup_worker.h"
#include "plugin/runtime/record_binding.h"
#include "plugin/runtime/user_socket.h"
#include "plugin/collector.h"
#include "tests/fixtures/tree.h"
#include <map>
#include <mutex>

namespace memcg::runtime {
namespace {

const std::string kId = "4e7da2efcf19a0f30ba347e128b16cacae621fe522bb9c205d745f0cfda4de87";
const std::string kOther = "136738ba961e00ac0949b50d16238144e8eec00e303a7f80235c30e2f7f8e86a";

std::string inspect_json(const std::string& id, const std::string& name, const std::string& image,
                         const std::string& labels = "{}") {
  return R"({"Id":")" + id + R"(","Name":"/)" + name + R"(","State":{"Running":true},"Config":{"Image":")" + image +
         R"(","Labels":)" + labels + R"(},"Image":"sha256:0f1e"})";
}

std::string reply(int status, const std::string& body, bool chunked = false) {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\nApi-Version: 1.41\r\n";
  if (!chunked) return r + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  r += "Transfer-Encoding: chunked\r\n\r\n";
  for (size_t i = 0; i < body.size(); i += 7) {
    const std::string part = body.substr(i, 7);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", part.size());
    r += std::string(size) + "\r\n" + part + "\r\n";
  }
  return r + "0\r\n\r\n";
}

TEST(EngineApi, RequestAsksForOneContainerAndClosesTheConnection) {
  const std::string r = engine_inspect_request(kId);
  EXPECT_TRUE(r.starts_with("GET /containers/" + kId + "/json HTTP/1.1\r\n"));
  EXPECT_NE(r.find("\r\nHost: "), std::string::npos);
  EXPECT_NE(r.find("\r\nConnection: close\r\n"), std::string::npos);
  EXPECT_TRUE(r.ends_with("\r\n\r\n"));
}

TEST(EngineApi, RepliesFramedEveryWayDecodeToTheSameBody) {
  const std::string body = inspect_json(kId, "web", "nginx:1.25");
  std::string err;
  for (bool chunked : {false, true}) {
    const std::string raw = reply(200, body, chunked);
    auto r = parse_http_reply(raw, true, err);
    ASSERT_TRUE(r) << err;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, body);
    // Not complete yet: asks for more without an error, until the last byte.
    for (size_t cut : {size_t{10}, raw.size() / 2, raw.size() - 1}) {
      EXPECT_FALSE(parse_http_reply(raw.substr(0, cut), false, err));
      EXPECT_EQ(err, "") << cut;
      EXPECT_FALSE(parse_http_reply(raw.substr(0, cut), true, err)) << cut;  // ... and cut short at EOF
      EXPECT_NE(err, "") << cut;
    }
  }
  // No framing: the body runs to EOF.
  auto r = parse_http_reply("HTTP/1.0 404 Not Found\r\n\r\n{\"message\":\"No such container\"}", true, err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->status, 404);
  EXPECT_FALSE(parse_http_reply("HTTP/1.0 404 Not Found\r\n\r\n{", false, err));
}

TEST(EngineApi, BrokenRepliesAreErrors) {
  std::string err;
  for (const char* raw : {"SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef",
                          "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd0\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n"}) {
    EXPECT_FALSE(parse_http_reply(raw, true, err)) << raw;
    EXPECT_NE(err, "") << raw;
  }
}

TEST(EngineApi, InspectGivesNameImageAndKubernetesLabels) {
  std::string err;
  auto r = parse_inspect(inspect_json(kId, "web", "nginx:1.25"), kId, err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->id, kId);
  EXPECT_EQ(r->name, "web");
  EXPECT_EQ(r->image, "nginx:1.25");
  EXPECT_EQ(r->cgroups_path, "");
  // cri-dockerd: Kubernetes' names from the labels, not k8s_<...>.
  r = parse_inspect(inspect_json(kId, "k8s_app_web-0_shop_0d3c6a1e-5b7f-4c1a-9e2d-000000000001_0", "app:2",
                                 R"({"io.kubernetes.container.name":"app","io.kubernetes.pod.name":"web-0",)"
                                 R"("io.kubernetes.pod.namespace":"shop","io.kubernetes.pod.uid":"0D3C6A1E-5B7F-4C1A-9E2D-000000000001"})"),
                    kId, err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->name, "app");
  EXPECT_EQ(r->pod, "web-0");
  EXPECT_EQ(r->namespace_, "shop");
  EXPECT_EQ(r->pod_uid, "0d3c6a1e-5b7f-4c1a-9e2d-000000000001");
}

TEST(EngineApi, HostileInspectRepliesAreRefusedOrCleaned) {
  std::string err;
  EXPECT_FALSE(parse_inspect(inspect_json(kOther, "web", "x"), kId, err));  // about another container
  EXPECT_NE(err.find("another container"), std::string::npos);
  EXPECT_FALSE(parse_inspect(std::string(100, '[') + std::string(100, ']'), kId, err));
  EXPECT_FALSE(parse_inspect("[1,2]", kId, err));
  EXPECT_FALSE(parse_inspect("{\"Id\":", kId, err));
  EXPECT_FALSE(parse_inspect(std::string(kMaxEngineReplyBytes + 1, ' '), kId, err));
  // Wrong types are ignored; control characters and invalid UTF-8 dropped; length bounded.
  auto r = parse_inspect(R"({"Id":")" + kId + R"(","Name":7,"Config":{"Image":["x"],"Labels":"no"}})", kId, err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->name, "");
  EXPECT_EQ(r->image, "");
  EXPECT_FALSE(parse_inspect(inspect_json(kId, "we\xff", "x"), kId, err));  // not UTF-8: not JSON
  r = parse_inspect(inspect_json(kId, std::string("we\\u0000b\\n") + std::string(400, 'n'), std::string(900, 'i')), kId, err);
  ASSERT_TRUE(r) << err;
  EXPECT_TRUE(r->name.starts_with("webnnn"));
  EXPECT_EQ(r->name.size(), kMaxValueBytes);
  EXPECT_EQ(r->image.size(), kMaxImageBytes);
}

// A candidate cgroup for binding, from its path.
struct Cg {
  std::string path;
  Identity ident = identify(path);
  int depth = static_cast<int>(std::count(path.begin(), path.end(), '/')) + 1;
  BindCandidate c() const { return {path, depth, ident.container_id, ident.runtime}; }
};

const ContainerRecord* bound(const BoundRecords& m, const Cg& cg) { return record_for(m, cg.ident.container_id, cg.path); }

TEST(EngineBinding, EngineRecordsBindToTheOutermostCgroupAndFillWhatTheHookLeftEmpty) {
  RecordMap hooks, podman, docker;
  hooks[kId] = ContainerRecord{kId, "", "", "", "", "", "machine.slice:libpod:" + kId};
  podman[kId] = ContainerRecord{kId, "pm", "localhost/memcg-test:1", "", "", "", ""};
  docker[kOther] = ContainerRecord{kOther, "dk", "busybox:1", "", "", "", ""};
  docker["feed"] = ContainerRecord{"feed", "nocgroup", "", "", "", "", ""};
  const Cg pm{"machine.slice/libpod-" + kId + ".scope"}, dk{"system.slice/docker-" + kOther + ".scope"},
      nested{"system.slice/docker-" + kOther + ".scope/docker-" + kOther + ".scope"};
  const BindCandidate cgroups[] = {nested.c(), pm.c(), dk.c()};
  const EngineAnswers both[] = {{&docker, "docker", 0}, {&podman, "podman", 0}};
  const BoundRecords m = bind_records(cgroups, &hooks, both);
  ASSERT_EQ(m.size(), 2u);  // no cgroup for "feed"
  ASSERT_TRUE(bound(m, pm));
  EXPECT_EQ(bound(m, pm)->name, "pm");
  EXPECT_EQ(bound(m, pm)->image, "localhost/memcg-test:1");
  EXPECT_EQ(bound(m, pm)->cgroups_path, "machine.slice:libpod:" + kId);  // the hook's record, filled
  ASSERT_TRUE(bound(m, dk));
  EXPECT_EQ(bound(m, dk)->name, "dk");
  EXPECT_FALSE(bound(m, nested)) << "the outermost cgroup with the id, not the look-alike below it";
  // A name the hook has wins.
  hooks[kId].name = "from-hook";
  EXPECT_EQ(bound(bind_records(cgroups, &hooks, both), pm)->name, "from-hook");
  EXPECT_EQ(bind_records(cgroups, nullptr, both).size(), 2u);
  EXPECT_EQ(bind_records(cgroups, &hooks, {}).size(), 1u);
  // An engine names only cgroups of its own runtime: docker's answer for a
  // podman cgroup's id binds nowhere.
  RecordMap wrong;
  wrong[kId] = ContainerRecord{kId, "not-docker's", "", "", "", "", ""};
  const EngineAnswers docker_only[] = {{&wrong, "docker", 0}};
  EXPECT_TRUE(bind_records(cgroups, nullptr, docker_only).empty());
}

// A user answering on their own socket for root's and other users'
// container ids, from cgroups they created in their own instance.
TEST(EngineBinding, AUsersAnswersLabelOnlyCgroupsInThatUsersOwnInstance) {
  const std::string kBob = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  const std::string alice = "user.slice/user-1000.slice/user@1000.service";
  const std::string bob = "user.slice/user-1001.slice/user@1001.service";
  const Cg root_docker{"system.slice/docker-" + kOther + ".scope"}, root_podman{"machine.slice/libpod-" + kId + ".scope"},
      bobs{bob + "/user.slice/libpod-" + kBob + ".scope"},
      fake_root_docker{alice + "/user.slice/libpod-" + kOther + ".scope"},
      fake_root_podman{alice + "/libpod-" + kId + ".scope"},
      fake_bob{alice + "/libpod-" + kBob + ".scope"},  // shallower than bob's own
      fake_suffix{alice + "/system.slice/docker-" + kOther + ".scope"};
  RecordMap hooks, docker, bob_answers, alice_answers;
  hooks[kId] = ContainerRecord{kId, "honest", "", "", "", "", "machine.slice:libpod:" + kId};  // image left empty
  docker[kOther] = ContainerRecord{kOther, "db", "postgres:16", "", "", "", ""};
  bob_answers[kBob] = ContainerRecord{kBob, "bobs-app", "bob/app:1", "", "", "", ""};
  for (const auto& id : {kId, kOther, kBob})
    alice_answers[id] = ContainerRecord{id, "evil", "evil/image:1", "evil-pod", "kube-system", "", ""};
  const BindCandidate cgroups[] = {fake_root_docker.c(), fake_root_podman.c(), fake_bob.c(), fake_suffix.c(),
                                   root_docker.c(), root_podman.c(), bobs.c()};
  const EngineAnswers engines[] = {{&alice_answers, "podman", 1000}, {&docker, "docker", 0}, {&bob_answers, "podman", 1001}};
  const BoundRecords m = bind_records(cgroups, &hooks, engines);
  ASSERT_TRUE(bound(m, root_docker));
  EXPECT_EQ(bound(m, root_docker)->name, "db");
  ASSERT_TRUE(bound(m, root_podman));
  EXPECT_EQ(bound(m, root_podman)->name, "honest");
  EXPECT_EQ(bound(m, root_podman)->image, "") << "a user's answer never fills a root record's empty fields";
  EXPECT_EQ(bound(m, root_podman)->namespace_, "");
  ASSERT_TRUE(bound(m, bobs));
  EXPECT_EQ(bound(m, bobs)->name, "bobs-app") << "bob's answer binds in bob's instance, whatever alice made";
  EXPECT_FALSE(bound(m, fake_suffix)) << "root's record does not reach into a user's instance by a path suffix";
  // Alice's own cgroups carry alice's answers: they are hers.
  for (const Cg* own : {&fake_root_podman, &fake_bob, &fake_root_docker}) {
    ASSERT_TRUE(bound(m, *own)) << own->path;
    EXPECT_EQ(bound(m, *own)->name, "evil");
  }
  // Without root's docker engine, root's docker cgroup still gets nothing of alice's.
  const EngineAnswers alice_only[] = {{&alice_answers, "podman", 1000}};
  EXPECT_FALSE(bound(bind_records(cgroups, nullptr, alice_only), root_docker));
  // Not even with a hook record for it: the hook is root's, the fill is not alice's to make.
  hooks[kOther] = ContainerRecord{kOther, "", "", "", "", "", "/system.slice/docker-" + kOther + ".scope"};
  const BoundRecords h = bind_records(cgroups, &hooks, alice_only);
  ASSERT_TRUE(bound(h, root_docker));
  EXPECT_EQ(bound(h, root_docker)->image, "");
  EXPECT_FALSE(bound(h, fake_suffix)) << "a hook record binds outside the users' instances only";
}

// A Unix-socket server on its own thread: `respond` gets each request and
// returns what to write back (or sleeps, or closes).
class FakeEngine {
 public:
  using Respond = std::function<std::string(const std::string& request)>;
  FakeEngine(std::string path, Respond respond) : path_(std::move(path)), respond_(std::move(respond)) {
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 64), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeEngine() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  int requests() const { return requests_; }

 private:
  void serve() {
    while (!stop_) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      ++requests_;
      const std::string out = respond_(req);
      for (size_t off = 0; off < out.size();) {
        const ssize_t n = ::send(c, out.data() + off, out.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
      ::close(c);
    }
  }
  std::string path_;
  Respond respond_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

std::string temp_socket(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("memcg-engine-") + std::to_string(::getpid()) + "-" + name))
      .string();
}

// Polls until `pred` holds (the worker is asynchronous); false after 20 s.
bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

// The id a request asks about ("GET /containers/<id>/json ...").
std::string asked_id(const std::string& req) {
  const size_t a = req.find("/containers/") + 12;
  return req.substr(a, req.find("/json") - a);
}

TEST(EngineClient, NamesContainersFromTheEngineThatKnowsThemAndForgetsGoneOnes) {
  // Docker knows kOther, podman knows kId; Docker's socket is asked first.
  FakeEngine docker(temp_socket("docker"), [](const std::string& req) {
    const std::string id = asked_id(req);
    return id == kOther ? reply(200, inspect_json(kOther, "dk", "busybox:1"), true)
                        : reply(404, R"({"message":"No such container"})");
  });
  FakeEngine podman(temp_socket("podman"), [](const std::string& req) {
    const std::string id = asked_id(req);
    return id == kId ? reply(200, inspect_json(kId, "pm", "localhost/memcg-test:1")) : reply(404, "{}");
  });
  EngineClient client({.sockets = {temp_socket("docker"), temp_socket("podman")}});
  const TimePoint t0{std::chrono::hours(1)};
  client.want({kId, kOther}, t0);
  ASSERT_TRUE(eventually([&] { return client.records()->size() == 2; }));
  EXPECT_EQ(client.records()->at(kId).name, "pm");
  EXPECT_EQ(client.records()->at(kOther).image, "busybox:1");
  const EngineStats s = client.stats();
  EXPECT_EQ(s.lookups[0], 2u);  // ok
  EXPECT_EQ(s.lookups[1], 1u);  // kId on Docker's socket
  EXPECT_EQ(s.lookups[2], 0u);
  // One lookup per id: asking again at later rescans costs no request.
  const int asked = docker.requests() + podman.requests();
  client.want({kId, kOther}, t0 + std::chrono::minutes(5));
  client.want({kId, kOther}, t0 + std::chrono::minutes(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(docker.requests() + podman.requests(), asked);
  // A container gone from the tree is forgotten.
  const uint64_t gen = client.generation();
  client.want({kId}, t0 + std::chrono::minutes(11));
  EXPECT_EQ(client.records()->size(), 1u);
  EXPECT_GT(client.generation(), gen);
  EXPECT_TRUE(client.take_errors().empty());
}

TEST(EngineClient, ASilentEngineNeverBlocksTheCallerAndIsReportedOnce) {
  std::atomic<bool> release{false};
  FakeEngine silent(temp_socket("silent"), [&](const std::string&) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return std::string();
  });
  EngineClient client({.sockets = {temp_socket("silent")}, .timeout = std::chrono::milliseconds(300)});
  const TimePoint t0{std::chrono::hours(1)};
  // want() only queues: it returns while the engine holds the worker (were it
  // blocking, this test would hang rather than fail on a timing).
  client.want({kId, kOther}, t0);
  client.want({kId, kOther}, t0 + std::chrono::seconds(1));
  EXPECT_TRUE(client.records()->empty());
  ASSERT_TRUE(eventually([&] { return client.stats().lookups[2] >= 1; }));
  auto errors = client.take_errors();
  ASSERT_EQ(errors.size(), 1u);  // once, not per id
  EXPECT_EQ(errors[0].path, temp_socket("silent"));
  EXPECT_EQ(errors[0].err, ETIMEDOUT);
  EXPECT_NE(errors[0].message().find("ask the engine at"), std::string::npos);
  release = true;
}

TEST(EngineClient, AnEngineDownThenBackIsRetriedAfterTheRetryInterval) {
  const std::string path = temp_socket("restart");
  ::unlink(path.c_str());
  EngineClient client({.sockets = {path}, .retry = std::chrono::milliseconds(200)});
  const TimePoint t0{std::chrono::hours(1)};
  client.want({kId}, t0);
  ASSERT_TRUE(eventually([&] { return client.stats().lookups[2] == 1; }));
  auto errors = client.take_errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].err, ENOENT);  // no socket: the engine is not running
  client.want({kId}, t0 + std::chrono::milliseconds(50));  // not yet due
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(client.stats().lookups[2], 1u);
  // The engine starts; the next rescan after `retry` asks again and names it.
  FakeEngine engine(path, [](const std::string&) { return reply(200, inspect_json(kId, "back", "img")); });
  client.want({kId}, t0 + std::chrono::seconds(1));
  ASSERT_TRUE(eventually([&] { return client.records()->count(kId) == 1; }));
  EXPECT_EQ(client.records()->at(kId).name, "back");
}

TEST(EngineClient, HostileRepliesNameNothingAndCostBoundedMemory) {
  std::atomic<int> n{0};
  FakeEngine hostile(temp_socket("hostile"), [&](const std::string& req) -> std::string {
    const std::string id = asked_id(req);
    switch (n++ % 5) {
      case 0: return "HTTP/1.1 200 OK\r\n\r\n" + std::string(3 * 1024 * 1024, 'x');  // endless body
      case 1: return reply(200, inspect_json(kOther, "impostor", "x"));              // another container's answer
      case 2: return reply(200, std::string(5000, '[') + std::string(5000, ']'));
      case 3: return reply(500, R"({"message":"server error"})");
      default: return "garbage\r\n\r\n";
    }
  });
  EngineClient client({.sockets = {temp_socket("hostile")}, .retry = std::chrono::milliseconds(0)});
  const TimePoint t0{std::chrono::hours(1)};
  for (int round = 0; round < 5; ++round) {
    client.want({kId}, t0 + std::chrono::seconds(round));
    ASSERT_TRUE(eventually([&] { return client.stats().lookups[2] >= static_cast<uint64_t>(round + 1); })) << round;
  }
  EXPECT_TRUE(client.records()->empty());
  EXPECT_EQ(client.stats().lookups[0], 0u);
  EXPECT_EQ(client.take_errors().size(), 1u);
}

TEST(EngineClient, CacheAndQueueStayWithinTheirBounds) {
  FakeEngine engine(temp_socket("bounded"), [](const std::string& req) {
    const std::string id = asked_id(req);
    return reply(200, inspect_json(id, "c" + id.substr(0, 6), "img"));
  });
  EngineClient client({.sockets = {temp_socket("bounded")}, .max_entries = 40, .max_queue = 10});
  std::unordered_set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    char id[13];
    std::snprintf(id, sizeof id, "%012x", 0xabc000 + i);
    ids.insert(id);
  }
  const TimePoint t0{std::chrono::hours(1)};
  for (int round = 0; round < 20; ++round) {
    client.want(ids, t0 + std::chrono::seconds(round));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(eventually([&] { return client.records()->size() == 40; }));
  EXPECT_LE(engine.requests(), 40);
}


size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(LookupWorker, OneThreadAsksEveryEngineAndADeadOneIsReportedOnce) {
  FakeEngine good(temp_socket("good"), [](const std::string& req) {
    const std::string id = asked_id(req);
    return reply(200, inspect_json(id, "n" + id.substr(0, 4), "img"));
  });
  std::atomic<bool> release{false};
  FakeEngine silent(temp_socket("mute"), [&](const std::string&) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return std::string();
  });
  const size_t before = thread_count();
  {
    LookupWorker worker;
    std::vector<std::unique_ptr<EngineClient>> clients;
    clients.push_back(std::make_unique<EngineClient>(
        EngineClient::Options{.sockets = {temp_socket("mute")}, .timeout = std::chrono::milliseconds(300)}, worker));
    for (int i = 0; i < 4; ++i)
      clients.push_back(std::make_unique<EngineClient>(EngineClient::Options{.sockets = {temp_socket("good")}}, worker));
    EXPECT_EQ(thread_count(), before + 1);  // five clients, one worker
    const TimePoint t0{std::chrono::hours(1)};
    for (auto& c : clients) c->want({kId, kOther}, t0);
    ASSERT_TRUE(eventually([&] {
      return std::all_of(clients.begin() + 1, clients.end(), [](auto& c) { return c->records()->size() == 2; });
    }));
    EXPECT_TRUE(clients[0]->records()->empty());
    EXPECT_EQ(clients[0]->take_errors().size(), 1u);  // the mute engine timed out, once
    clients.erase(clients.begin() + 2);  // a client dropped while the worker serves the others
    clients[1]->want({kId}, t0 + std::chrono::minutes(1));
    EXPECT_EQ(clients[1]->records()->size(), 1u);
  }
  release = true;
  EXPECT_EQ(thread_count(), before);  // the worker stopped with its owner
}

TEST(UserEngine, TheOwnerIsTheUserInstanceDirectlyUnderTheUsersSlice) {
  EXPECT_EQ(cgroup_owner("user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId + ".scope"), 1000u);
  EXPECT_EQ(cgroup_owner("user.slice/user-1000.slice/user@1000.service"), 1000u);
  EXPECT_EQ(cgroup_owner("user.slice/user-0.slice/user@0.service/app.slice/x.service"), 0u);
  EXPECT_EQ(cgroup_owner("user.slice/user-4294967295.slice/user@4294967295.service/c"), 4294967295u);
  // A user's own directories named like another user's instance, deeper down: still theirs.
  EXPECT_EQ(cgroup_owner("user.slice/user-1000.slice/user@1000.service/user.slice/user-1001.slice/user@1001.service/x"), 1000u);
  EXPECT_EQ(cgroup_owner("a/user@1.service/b/user@4294967295.service/c"), std::nullopt) << "not at the top";
  EXPECT_EQ(cgroup_owner("system.slice/docker-" + kId + ".scope/user.slice/user-7.slice/user@7.service"), std::nullopt);
  EXPECT_EQ(cgroup_owner("user.slice/user-1000.slice/user@1001.service/x"), std::nullopt) << "two different uids";
  EXPECT_EQ(cgroup_owner("machine.slice/libpod-" + kId + ".scope"), std::nullopt);
  EXPECT_EQ(cgroup_owner("user.slice/user-1000.slice/session-3.scope"), std::nullopt);
  EXPECT_EQ(cgroup_owner("user.slice/user-x1.slice/user@x1.service"), std::nullopt);
  EXPECT_EQ(cgroup_owner("user.slice/user-4294967296.slice/user@4294967296.service"), std::nullopt);
  EXPECT_EQ(cgroup_owner("user.slice/user-+1.slice/user@+1.service"), std::nullopt);
  EXPECT_EQ(cgroup_owner("user.slice/user-1000.slice/user@1000.serviceX/x"), std::nullopt);
  EXPECT_EQ(cgroup_owner("/"), std::nullopt);
}

TEST(UserEngine, TheSocketPatternTakesTheUid) {
  EXPECT_EQ(user_socket("/run/podman-api/users/%U/podman.sock", 1000), "/run/podman-api/users/1000/podman.sock");
  EXPECT_EQ(user_socket("/run/%U-%U.sock", 7), "/run/7-7.sock");
  EXPECT_EQ(user_socket("/run/100%%/%U%x", 0), "/run/100%/0%x");
  EXPECT_EQ(user_socket("/run/trailing%", 1), "/run/trailing%");
}

// A host with a rootful podman container and rootless ones of two users,
// each engine a fake that knows its own container; run until all are named.
struct RootlessHost {
  const std::string kThird = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> asked;  // socket -> ids
  const std::string root_sock = temp_socket("podman-root");
  const std::string pattern = temp_socket("podman-user-%U");
  const std::string u1000 = user_socket(pattern, 1000), u1001 = user_socket(pattern, 1001);
  FakeEngine rootful{root_sock, engine(root_sock, kId, "rootful")};
  FakeEngine user1000{u1000, engine(u1000, kOther, "alice")};
  FakeEngine user1001{u1001, engine(u1001, kThird, "bob")};
  fixtures::Tree tree;
  fixtures::CgroupSpec spec;
  config::Config cfg = config::Config::builtin({4096, 1});
  std::unique_ptr<Collector> collector;
  Collector& c;

  RootlessHost() : collector(make()), c(*collector) {}

  std::function<std::string(const std::string&)> engine(const std::string& socket, const std::string& knows,
                                                         const std::string& name) {
    return [this, socket, knows, name](const std::string& req) {
      const std::string id = asked_id(req);
      {
        std::lock_guard lock(mu);
        asked[socket].push_back(id);
      }
      return id == knows ? reply(200, inspect_json(id, name, "localhost/img:" + name)) : reply(404, "{}");
    };
  }

  std::unique_ptr<Collector> make() {
    spec.current = 1 << 20;
    tree.add("machine.slice", spec);
    tree.add("machine.slice/libpod-" + kId + ".scope", spec);
    for (const auto& [uid, id] : {std::pair{1000, kOther}, std::pair{1001, kThird}}) {
      const std::string user = "user.slice/user-" + std::to_string(uid) + ".slice/user@" + std::to_string(uid) + ".service";
      tree.add("user.slice", spec);
      tree.add("user.slice/user-" + std::to_string(uid) + ".slice", spec);
      tree.add(user, spec);
      tree.add(user + "/user.slice", spec);
      tree.add(user + "/user.slice/libpod-" + id + ".scope", spec);
    }
    cfg.containers.records_dir = "";
    cfg.containers.podman_socket = root_sock;
    cfg.containers.podman_user_socket = pattern;
    cfg.resolve();
    return std::make_unique<Collector>(tree.root(), cfg);
  }

  std::string name_of(const std::string& id) {
    const auto snap = c.latest();
    for (const auto& v : snap->cgroups)
      if (v.id->identity.container_id == id) return std::string(snap->identity(*v.id, "container_name"));
    return "(no cgroup)";
  }

  bool all_named() {
    return eventually([&] {
      c.run_pass();
      return name_of(kId) == "rootful" && name_of(kOther) == "alice" && name_of(kThird) == "bob";
    });
  }
};

// Each container is asked of its own engine only, and the users' lookups
// count with podman's.
TEST(UserEngine, RootlessContainersAreAskedOfTheirUsersEngineOnly) {
  RootlessHost h;
  ASSERT_TRUE(h.all_named()) << h.name_of(kId) << " " << h.name_of(kOther) << " " << h.name_of(h.kThird);
  {
    std::lock_guard lock(h.mu);
    EXPECT_EQ(h.asked[h.root_sock], std::vector<std::string>{kId}) << "root's engine never hears of users' containers";
    EXPECT_EQ(h.asked[h.u1000], std::vector<std::string>{kOther});
    EXPECT_EQ(h.asked[h.u1001], std::vector<std::string>{h.kThird});
  }
  const auto& podman = h.c.latest()->engines[engine_of("podman")];
  ASSERT_TRUE(podman);
  EXPECT_EQ(podman->lookups[static_cast<size_t>(LookupResult::ok)], 3u) << "the users' lookups count with podman's";
  EXPECT_EQ(podman->cached, 3u);
}

TEST(UserEngine, AUserEngineNotListeningLeavesPathLabelsAndCountersStay) {
  RootlessHost h;
  ASSERT_TRUE(h.all_named());
  // A user whose engine is not listening: reported once, its container keeps its path's labels.
  h.tree.remove("user.slice/user-1001.slice/user@1001.service/user.slice/libpod-" + h.kThird + ".scope");
  const std::string kFourth = "aa" + h.kThird.substr(2);
  h.tree.add("user.slice/user-1001.slice/user@1001.service/user.slice/libpod-" + kFourth + ".scope", h.spec);
  auto cfg2 = h.cfg;
  cfg2.containers.podman_user_socket = temp_socket("nobody-%U");
  h.c.set_config(cfg2);
  size_t errors = 0;
  for (int i = 0; i < 3; ++i) errors += h.c.run_pass().errors.size();
  ASSERT_TRUE(eventually([&] {
    const auto r = h.c.run_pass();
    errors += r.errors.size();
    return errors > 0;
  }));
  h.c.set_config(cfg2);  // a removal and a creation in one directory: its listing is taken again at the next rescan
  h.c.run_pass();
  EXPECT_EQ(h.name_of(kFourth), "");
  EXPECT_EQ(h.name_of(kId), "rootful") << "root's engine unaffected";
  // The users' clients were replaced (a new pattern) and bob's dropped: the
  // counts they made stay in the counters, which never go back.
  const auto& after = h.c.latest()->engines[engine_of("podman")];
  ASSERT_TRUE(after);
  EXPECT_EQ(after->lookups[static_cast<size_t>(LookupResult::ok)], 3u);
  EXPECT_GE(after->lookups[static_cast<size_t>(LookupResult::error)], 1u);

  // Turned off: the series go (an engine that is off has none).
  auto off = cfg2;
  off.containers.podman_socket = "";
  off.containers.podman_user_socket = "";
  h.c.set_config(off);
  h.c.run_pass();
  EXPECT_FALSE(h.c.latest()->engines[engine_of("podman")]);
}

// Alice makes directories named like other users' instances inside her own:
// every container there is asked of her socket only, and her fakes take no
// client slots (the uid is that of the instance directly under the slice).
TEST(UserEngine, FakeUserInstancesInsideAUsersSubtreeAreThatUsers) {
  std::mutex mu;
  std::map<std::string, int> asked;  // socket -> lookups
  const std::string pattern = temp_socket("podman-owner-%U");
  std::vector<std::unique_ptr<FakeEngine>> fakes;
  for (uint32_t uid : {1000u, 1001u, 2000u, 2001u}) {
    const std::string sock = user_socket(pattern, uid);
    fakes.push_back(std::make_unique<FakeEngine>(sock, [&, sock](const std::string& req) {
      std::lock_guard lock(mu);
      ++asked[sock];
      return reply(200, inspect_json(asked_id(req), "from-" + sock, "img:1"));
    }));
  }
  fixtures::Tree tree;
  fixtures::CgroupSpec spec;
  spec.current = 1 << 20;
  const std::string alice = "user.slice/user-1000.slice/user@1000.service";
  for (const std::string& d : {std::string("user.slice"), std::string("user.slice/user-1000.slice"), alice}) tree.add(d, spec);
  for (int n = 0; n < 20; ++n) {
    const std::string fake = alice + "/user-" + std::to_string(2000 + n) + ".slice";
    tree.add(fake, spec);
    tree.add(fake + "/user@" + std::to_string(2000 + n) + ".service", spec);
    char id[65];
    std::snprintf(id, sizeof id, "%064x", n + 1);
    tree.add(fake + "/user@" + std::to_string(2000 + n) + ".service/libpod-" + id + ".scope", spec);
  }
  auto cfg = config::Config::builtin({4096, 1});
  cfg.containers.records_dir = "";
  cfg.containers.podman_user_socket = pattern;
  cfg.collector.max_depth = 8;
  cfg.resolve();
  Collector c(tree.root(), cfg);
  ASSERT_TRUE(eventually([&] {
    c.run_pass();
    std::lock_guard lock(mu);
    return asked[user_socket(pattern, 1000)] == 20;
  }));
  for (int i = 0; i < 3; ++i) c.run_pass();
  std::lock_guard lock(mu);
  EXPECT_EQ(asked.size(), 1u) << "only alice's socket is asked";
  for (const auto& v : c.latest()->cgroups)
    if (!v.id->identity.container_id.empty()) {
      EXPECT_EQ(c.latest()->identity(*v.id, "container_name"), "from-" + user_socket(pattern, 1000)) << v.id->path;
    }
}

}  // namespace
}  // namespace memcg::runtime
