#include "plugin/runtime/record_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/sys/read_file.h"

namespace memcg::runtime {

RecordStore::RecordStore(std::string dir) : dir_(std::move(dir)), inotify_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
  watch();
}

RecordStore::~RecordStore() = default;

void RecordStore::watch() {
  if (watching_ || !inotify_.valid()) return;
  // Records appear by rename (IN_MOVED_TO) and go by unlink; IN_CLOSE_WRITE
  // covers tools that write in place.
  const uint32_t mask = IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF;
  watching_ = ::inotify_add_watch(inotify_.get(), dir_.c_str(), mask | IN_ONLYDIR) >= 0;
  dirty_ = dirty_ || watching_;
}

void RecordStore::refresh(bool rescan, std::vector<IoError>& errors) {
  // Without a watch (the directory does not exist yet) the directory is only
  // looked at on rescans, never on every pass.
  if (!watching_ && rescan) {
    watch();
    dirty_ = true;
  }
  if (inotify_.valid()) {
    alignas(inotify_event) char buf[4096];
    for (ssize_t n; (n = ::read(inotify_.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR);) {
      if (n < 0) continue;
      dirty_ = true;
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
        if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) watching_ = false;  // re-watch at the next rescan
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
  }
  if (dirty_) load(errors);
}

void RecordStore::load(std::vector<IoError>& errors) {
  dirty_ = false;
  auto next = std::make_shared<RecordMap>();
  DIR* d = ::opendir(dir_.c_str());
  if (!d) {
    if (errno != ENOENT) errors.push_back({"list", dir_, errno});
    if (!records_->empty()) records_ = std::move(next);
    return;
  }
  std::string body;
  while (dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.front() == '.' || !name.ends_with(".json")) continue;  // temp files start with '.'
    const std::string path = dir_ + "/" + std::string(name);
    const int fd = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
      if (errno != ENOENT) errors.push_back({"open", path, errno});
      continue;
    }
    const sys::UniqueFd owner(fd);
    struct stat st{};
    body.clear();
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      auto r = sys::read_fd(fd, kMaxRecordBytes);  // EINTR-safe, and bounded even if the file grows
      if (r.ok()) body = std::move(r).value();
    }
    std::string err;
    auto rec = parse_record(body, err);
    if (!rec || rec->id + ".json" != name) {
      errors.push_back({"parse " + (rec ? std::string("(id does not match the file name)") : err), path, EINVAL});
      continue;
    }
    (*next)[rec->id] = std::move(*rec);
  }
  ::closedir(d);
  records_ = std::move(next);
}

void RecordStore::expire(const std::unordered_set<std::string>& live, TimePoint now, Duration grace) {
  std::vector<std::string> expired;
  for (const auto& [id, rec] : *records_) {
    if (live.count(id)) {
      missing_since_.erase(id);
      continue;
    }
    auto [it, inserted] = missing_since_.emplace(id, now);
    if (!inserted && now - it->second >= grace) expired.push_back(id);
  }
  if (expired.empty()) return;
  auto next = std::make_shared<RecordMap>(*records_);
  for (const auto& id : expired) {
    next->erase(id);
    missing_since_.erase(id);
    ::unlink((dir_ + "/" + id + ".json").c_str());  // may be refused (root-owned dir): forgetting is enough
  }
  records_ = std::move(next);
}

}  // namespace memcg::runtime
