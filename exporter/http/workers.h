// The threads that answer requests for the connection gate
// (connection_gate.h): the gate parses a request and submits it; a worker
// turns it into a response with the handler the server gave (routes.h) and
// hands the bytes back; the gate writes them at the client's pace. Workers
// never touch a socket, so a slow client holds none of them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/sys/unique_fd.h"
#include "exporter/http/head.h"
#include "exporter/http/request.h"

namespace memcg::exporter {

// A request as the gate read it: its bytes (request line to the end of the
// body) and where its parts are (check_request's parse, not done again).
struct Job {
  uint64_t conn = 0;
  std::string bytes;
  RequestHead head;
  std::string_view head_bytes() const noexcept { return std::string_view(bytes).substr(0, head.head_len); }
  std::string_view body() const noexcept { return std::string_view(bytes).substr(head.head_len); }
};

// The request as routes see it, its strings borrowed from `job`; `fields`
// holds the header list.
Request request_of(const Job& job, std::vector<Header>& fields);

// What goes back to the client: the head, then the body (shared with the
// scrape cache, never copied), or none.
struct Reply {
  uint64_t conn = 0;
  std::string head;
  std::shared_ptr<const std::string> body;
};

class Workers {
 public:
  using Handler = std::function<Reply(const Job&)>;

  // Starts `n` threads. `handler` runs on them and must not throw.
  Workers(size_t n, Handler handler);
  ~Workers();  // lets the running handlers finish; drops what waits
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  void submit(Job job);
  // Replies done since the last call; notify_fd() is readable while any wait.
  std::vector<Reply> take();
  int notify_fd() const noexcept { return notify_.get(); }

 private:
  void run();

  Handler handler_;
  sys::UniqueFd notify_;  // an eventfd
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;      // guarded by mu_
  std::vector<Reply> done_;   // guarded by mu_
  bool stop_ = false;         // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace memcg::exporter
