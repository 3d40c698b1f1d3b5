// Keeps a records directory equal to what an API source knows: the identity
// helper (memcg-exporter-identity) mirrors containerd's containers into the
// directory the exporter reads as it reads the OCI hook's records, so that
// the process that listens on the network never holds containerd's socket.
// A record is written (oci_record.h: atomically) when it is new or changed
// and removed when its container is gone; record files in the directory that
// this mirror did not write (an earlier run's) go at the first sync.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "plugin/runtime/record_store.h"

namespace memcg::runtime {

class RecordMirror {
 public:
  explicit RecordMirror(std::string dir) : dir_(std::move(dir)) {}

  struct Result {
    size_t written = 0, removed = 0;
    std::vector<std::string> errors;  // one per file that failed, with path and errno
  };
  Result sync(const RecordMap& records);

 private:
  void sweep(const RecordMap& records, Result& r);
  std::string dir_;
  std::unordered_map<std::string, ContainerRecord> written_;
  bool swept_ = false;
};

}  // namespace memcg::runtime
