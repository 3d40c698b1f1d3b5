// The connection gate's deadlines on the injected clock: a head that does
// not complete, a request no worker takes, a worker that does not answer.
// Real loopback sockets; time moves only when the test moves it (each check
// then wakes the gate with a new connection), so no wall-clock timeout is
// waited for.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "exporter/http/connection_gate.h"
#include "plugin/clock.h"

namespace memcg::exporter {
namespace {

using namespace std::chrono_literals;

sys::UniqueFd connect_to(int port) {
  sys::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

void send_all(int fd, std::string_view s) { ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size())); }

// What the gate sent before closing, or "<open>" when the connection is
// still open after `wait` of real time.
std::string read_until_closed(int fd, std::chrono::milliseconds wait) {
  std::string got;
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return got + "<open>";
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

template <typename F>
bool eventually(F done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(10ms);
  return done();
}

struct Gate {
  explicit Gate(size_t workers = 8) {
    GateOptions o;
    o.listen = {"127.0.0.1:0"};
    o.head_timeout = 10s;
    o.idle_timeout = 2s;
    o.workers = workers;
    gate = std::make_unique<ConnectionGate>(o, stats, clock);
    gate->start([this](const Job&) { return never_answer(); }, nullptr);
  }
  ~Gate() {
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv.notify_all();
    gate.reset();
  }
  // A worker that does not answer until the test ends.
  Reply never_answer() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return done; });
    return {};
  }
  int port() const { return gate->ports().front().port; }
  // A new connection makes the gate's loop wake and check its deadlines.
  void wake() {
    const uint64_t before = stats.accepted.load();
    pokes.push_back(connect_to(port()));
    EXPECT_TRUE(eventually([&] { return stats.accepted.load() > before; }));
  }

  ManualClock clock;
  GateStats stats;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::unique_ptr<ConnectionGate> gate;
  std::vector<sys::UniqueFd> pokes;
};

TEST(ConnectionGate, AnIncompleteHeadIsClosedAtTheRequestTimeoutOfItsClock) {
  Gate g;
  const sys::UniqueFd client = connect_to(g.port());
  send_all(client.get(), "GET /metrics HTTP/1.1\r\nHost: x\r\n");  // no blank line
  // Counted as waiting once the loop published it: opened, its deadline taken.
  ASSERT_TRUE(eventually([&] { return g.stats.waiting.load() == 1; }));
  g.clock.advance(9s);
  g.wake();
  EXPECT_EQ(read_until_closed(client.get(), 200ms), "<open>") << "before web.request_timeout";
  EXPECT_EQ(g.stats.head_timeouts.load(), 0u);
  g.clock.advance(2s);
  g.wake();
  EXPECT_EQ(read_until_closed(client.get(), 5000ms), "") << "closed, nothing sent";
  EXPECT_EQ(g.stats.head_timeouts.load(), 1u);
}

TEST(ConnectionGate, ARequestNoWorkerTakesGets503AndAnUnansweredOneIsClosed) {
  Gate g(1);  // one worker, held by the first request (it never answers)
  const sys::UniqueFd first = connect_to(g.port()), second = connect_to(g.port());
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  send_all(first.get(), request);
  ASSERT_TRUE(eventually([&] { return g.stats.relayed.load() == 1; }));
  send_all(second.get(), request);
  // Read whole (so queued, its deadline taken) before the clock moves.
  ASSERT_TRUE(eventually([&] { return g.stats.bytes_received.load() == 2 * request.size(); }));
  g.clock.advance(10s + 1ms);
  g.wake();
  const std::string answer = read_until_closed(second.get(), 5000ms);
  EXPECT_EQ(answer.rfind("HTTP/1.1 503 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("no worker was free within web.request_timeout"), std::string::npos) << answer;
  EXPECT_EQ(read_until_closed(first.get(), 200ms), "<open>") << "a worker has head + idle timeout + 1 s";
  g.clock.advance(3s);  // 13 s at the worker: past 10 + 2 + 1
  g.wake();
  EXPECT_EQ(read_until_closed(first.get(), 5000ms), "");
}

TEST(ConnectionGate, AConnectionThatSendsNothingIsClosedAtTheRequestTimeoutNotBefore) {
  Gate g;
  const sys::UniqueFd client = connect_to(g.port());
  // Counted as waiting once the loop published it: opened, its deadline taken.
  ASSERT_TRUE(eventually([&] { return g.stats.waiting.load() == 1; }));
  g.clock.advance(9999ms);  // a fresh connection has the head timeout (10 s) for its first request
  g.wake();
  EXPECT_EQ(read_until_closed(client.get(), 200ms), "<open>");
  g.clock.advance(1ms);
  g.wake();
  EXPECT_EQ(read_until_closed(client.get(), 5000ms), "");
  EXPECT_EQ(g.stats.head_timeouts.load(), 1u) << "nothing arrived: a head that never came";
}

}  // namespace
}  // namespace memcg::exporter
