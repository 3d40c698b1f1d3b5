// Container names from the Docker Engine API (or podman's compatible one),
// for the containers whose hooks cannot name them (Docker runs no hooks.d).
// One worker thread asks each engine socket about each new container id, one
// lookup at a time with a deadline; the collector only hands over ids and
// picks up published results, so a slow, dead or hostile engine never blocks
// or fails collection. Bounded: at most `max_entries` ids cached (only ids of
// live cgroups are kept), `max_queue` waiting, one reply of at most
// kMaxEngineReplyBytes in memory.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "plugin/clock.h"
#include "plugin/error.h"
#include "plugin/runtime/engine_stats.h"
#include "plugin/runtime/record_store.h"
#include "plugin/sys/unique_fd.h"

namespace memcg::runtime {

class EngineClient {
 public:
  struct Options {
    std::vector<std::string> sockets;               // asked in order; the first that knows the id answers
    Duration timeout = std::chrono::seconds(2);     // per lookup: connect, send, whole reply
    Duration retry = std::chrono::seconds(10);      // an id no engine knew, or an engine that failed (one rescan)
    size_t max_entries = 16384;
    size_t max_queue = 1024;
  };

  explicit EngineClient(Options options);
  ~EngineClient();  // wakes the worker and joins it (at most one I/O wait)
  EngineClient(const EngineClient&) = delete;
  EngineClient& operator=(const EngineClient&) = delete;

  // The container ids of the docker/podman cgroups live now (collector thread,
  // at rescans). Forgets the ids not among them, queues those never asked or
  // due for a retry. Never waits for the worker's I/O.
  void want(const std::unordered_set<std::string>& ids, TimePoint now);

  // Records by id (cgroups_path empty: the caller binds them to a cgroup);
  // replaced, never modified, when an answer arrives. `generation` changes
  // with every replacement.
  std::shared_ptr<const RecordMap> records() const;
  uint64_t generation() const;
  EngineStats stats() const;
  // Engine failures since the last call, one per socket that started failing
  // (errno: ECONNREFUSED, ENOENT, EACCES, ETIMEDOUT; EPROTO for a reply that
  // is not HTTP or not an inspect document). A socket that keeps failing is
  // reported again only after it answered once.
  std::vector<IoError> take_errors();

  const Options& options() const noexcept { return options_; }

 private:
  struct Entry {
    LookupResult state = LookupResult::error;
    bool queued = true;
    TimePoint asked{};  // when want() queued it
  };
  struct Outcome {
    LookupResult result = LookupResult::error;
    ContainerRecord record;
    int err = 0;  // for LookupResult::error
  };

  void run();
  Outcome lookup(const std::string& socket, const std::string& id);
  void publish_locked();

  const Options options_;
  sys::UniqueFd wake_;  // eventfd: stops the worker's poll

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::deque<std::string> queue_;
  std::unordered_map<std::string, Entry> entries_;
  RecordMap found_;
  std::shared_ptr<const RecordMap> published_ = std::make_shared<RecordMap>();
  uint64_t generation_ = 0;
  EngineStats stats_;
  std::vector<bool> failing_;  // per socket
  std::vector<IoError> errors_;
  std::thread worker_;
};

}  // namespace memcg::runtime
