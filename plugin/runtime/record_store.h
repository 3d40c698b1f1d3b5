// The daemon's view of the OCI hook records in one directory. Refreshed from
// the collector loop (inotify, no extra thread): changes are picked up at the
// next pass; the map is immutable once published, so snapshots share it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "plugin/clock.h"
#include "plugin/error.h"
#include "plugin/runtime/oci_record.h"
#include "base/sys/unique_fd.h"

namespace memcg::runtime {

using RecordMap = std::unordered_map<std::string, ContainerRecord>;

// What a lookup source (an Engine API client, containerd's) has found, and
// the copy the collector takes: `found` changes as answers arrive; publish()
// replaces `published`, which snapshots share and nobody modifies, and moves
// `generation`. Guarded by its owner's lock.
struct PublishedRecords {
  RecordMap found;
  std::shared_ptr<const RecordMap> published = std::make_shared<RecordMap>();
  uint64_t generation = 0;
  void publish() {
    published = std::make_shared<const RecordMap>(found);
    ++generation;
  }
};

class RecordStore {
 public:
  explicit RecordStore(std::string dir);
  ~RecordStore();
  RecordStore(const RecordStore&) = delete;
  RecordStore& operator=(const RecordStore&) = delete;

  // Re-reads the directory when inotify reported a change (or, without a
  // watch, when `rescan` is set). Bad record files are skipped and reported.
  void refresh(bool rescan, std::vector<IoError>& errors);
  // Drops records whose container id has not been among `live_ids` for
  // `grace` and removes their files where permitted: containers whose
  // poststop hook never ran (a crashed runtime) do not linger.
  void expire(const std::unordered_set<std::string>& live_ids, TimePoint now, Duration grace);

  std::shared_ptr<const RecordMap> records() const noexcept { return records_; }
  const std::string& dir() const noexcept { return dir_; }

 private:
  void watch();
  void load(std::vector<IoError>& errors);

  std::string dir_;
  sys::UniqueFd inotify_;
  bool watching_ = false;
  bool dirty_ = true;
  std::shared_ptr<const RecordMap> records_ = std::make_shared<RecordMap>();
  std::unordered_map<std::string, TimePoint> missing_since_;
};

}  // namespace memcg::runtime
