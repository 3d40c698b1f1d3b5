#include "plugin/runtime/record_mirror.h"

#include <dirent.h>

#include <cerrno>
#include <cstring>

namespace memcg::runtime {

void RecordMirror::sweep(const RecordMap& records, Result& r) {
  DIR* d = ::opendir(dir_.c_str());
  if (!d) {
    if (errno != ENOENT) r.errors.push_back("open " + dir_ + ": " + std::strerror(errno));
    return;
  }
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (!name.ends_with(".json") || name.front() == '.') continue;
    const std::string id(name.substr(0, name.size() - 5));
    if (!records.contains(id)) stale.push_back(id);
  }
  ::closedir(d);
  for (const auto& id : stale) {
    if (auto err = remove_record_file(dir_, id); !err.empty()) r.errors.push_back(std::move(err));
    else ++r.removed;
  }
}

RecordMirror::Result RecordMirror::sync(const RecordMap& records) {
  Result r;
  if (!swept_) {
    sweep(records, r);
    swept_ = r.errors.empty();
  }
  for (auto it = written_.begin(); it != written_.end();) {
    if (records.contains(it->first)) {
      ++it;
      continue;
    }
    if (auto err = remove_record_file(dir_, it->first); !err.empty()) {
      r.errors.push_back(std::move(err));
      ++it;
    } else {
      ++r.removed;
      it = written_.erase(it);
    }
  }
  for (const auto& [id, record] : records) {
    if (auto w = written_.find(id); w != written_.end() && w->second == record) continue;
    if (auto err = write_record_file(dir_, record); !err.empty()) {
      r.errors.push_back(std::move(err));
      continue;
    }
    written_[id] = record;
    ++r.written;
  }
  return r;
}

}  // namespace memcg::runtime
