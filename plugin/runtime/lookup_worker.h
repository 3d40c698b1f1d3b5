// One thread for every identity lookup the daemon makes (the Docker and
// podman Engine APIs, root's and each user's, and containerd's): the
// collector never waits on a runtime, and a host with five sockets configured
// runs one lookup thread, not five. Tasks take turns, one lookup each; a
// lookup is bounded by its own deadline and cancelled when the worker stops.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/sys/unique_fd.h"

namespace memcg::runtime {

class LookupWorker {
 public:
  class Task {
   public:
    virtual ~Task() = default;
    // Whether a lookup is waiting (called by the worker, any lock of the
    // task's own may be taken; never blocks on I/O).
    virtual bool pending() const = 0;
    // Runs one lookup. `cancel_fd` becomes readable when the worker stops:
    // poll it next to the socket and return at once.
    virtual void step(int cancel_fd) = 0;
    // When the task will have work without being notified (a retry, a
    // resync); the worker wakes then and asks pending().
    virtual std::chrono::steady_clock::time_point wake_at() const { return std::chrono::steady_clock::time_point::max(); }
    // Called from another thread when the worker stops while this task's
    // step() runs: end a call that cannot poll `cancel_fd` (gRPC).
    virtual void cancel() {}
  };

  LookupWorker();
  ~LookupWorker();  // cancels the lookup in progress and joins the thread
  LookupWorker(const LookupWorker&) = delete;
  LookupWorker& operator=(const LookupWorker&) = delete;

  void add(std::shared_ptr<Task> task);
  // The task gets no further turns; a lookup of it in progress finishes
  // (the worker holds it until then).
  void remove(const Task* task);
  // A task has work: call after releasing the task's own locks.
  void notify();

 private:
  void run();
  std::shared_ptr<Task> next_locked();

  sys::UniqueFd cancel_;  // eventfd, written once at stop
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::shared_ptr<Task>> tasks_;
  size_t turn_ = 0;  // round robin over tasks_
  std::shared_ptr<Task> running_;  // whose step() runs now
  std::thread thread_;
};

}  // namespace memcg::runtime
