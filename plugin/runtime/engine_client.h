// Container names from the Docker Engine API (or podman's compatible one),
// for the containers whose hooks cannot name them (Docker runs no hooks.d).
// A LookupWorker asks each engine socket about each new container id, one
// lookup at a time with a deadline; the collector only hands over ids and
// picks up published results, so a slow, dead or hostile engine never blocks
// or fails collection. Bounded: at most `max_entries` ids cached (only ids of
// live cgroups are kept), `max_queue` waiting, one reply of at most
// kMaxEngineReplyBytes in memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "plugin/clock.h"
#include "plugin/error.h"
#include "plugin/runtime/engine_stats.h"
#include "plugin/runtime/lookup_worker.h"
#include "plugin/runtime/record_store.h"

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

  // On a worker of its own (a thread that idles between lookups).
  explicit EngineClient(Options options);
  // On a shared worker, which must outlive the client.
  EngineClient(Options options, LookupWorker& worker);
  ~EngineClient();  // its lookups stop; one in progress finishes on the worker
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

  const Options& options() const noexcept;

 private:
  class Lookups;  // the queue, cache and sockets: the worker's task

  std::unique_ptr<LookupWorker> own_worker_;  // null on a shared worker
  LookupWorker& worker_;
  std::shared_ptr<Lookups> lookups_;
};

}  // namespace memcg::runtime
