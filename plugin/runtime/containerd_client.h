// Container names from containerd's own gRPC API (containers.containerd_socket):
// the containers of the configured namespaces (k8s.io: the CRI plugin's,
// which is what a Kubernetes node runs) listed at start, after every
// reconnect and every `resync`, kept current between lists by containerd's
// event stream (container create and delete). Calls run on the LookupWorker
// with a deadline each and bounded messages; the event stream is gRPC's own
// asynchronous read, which only queues what it hears for the worker. The
// collector never waits on containerd, a dead socket is one error per
// failing spell and `connected` = false.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plugin/clock.h"
#include "plugin/error.h"
#include "plugin/runtime/engine_stats.h"
#include "plugin/runtime/lookup_worker.h"
#include "plugin/runtime/record_store.h"

namespace memcg::runtime {

class ContainerdClient {
 public:
  struct Options {
    std::string socket = "/run/containerd/containerd.sock";
    std::vector<std::string> namespaces = {"k8s.io"};
    Duration timeout = std::chrono::seconds(2);         // a Get; a namespace's whole list gets 5x
    Duration resync = std::chrono::minutes(5);          // a full list even while events flow
    Duration retry = std::chrono::seconds(10);          // after a failed list or a lost stream
    size_t max_entries = 16384;                         // containers kept (more are left unnamed)
    size_t max_message_bytes = 1024 * 1024;             // one container, one event
  };

  ContainerdClient(Options options, LookupWorker& worker);  // the worker must outlive the client
  ~ContainerdClient();  // cancels the event stream and waits for gRPC to let it go
  ContainerdClient(const ContainerdClient&) = delete;
  ContainerdClient& operator=(const ContainerdClient&) = delete;

  // Records by container id, each with the cgroupsPath its spec names;
  // replaced, never modified. `generation` changes with every replacement.
  std::shared_ptr<const RecordMap> records() const;
  uint64_t generation() const;
  ContainerdStats stats() const;
  // containerd failures since the last call, once per failing spell.
  std::vector<IoError> take_errors();

  class Task;  // the worker's task (containerd_client.cpp)

 private:
  LookupWorker& worker_;
  std::shared_ptr<Task> task_;
};

}  // namespace memcg::runtime
