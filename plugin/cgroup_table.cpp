#include "plugin/cgroup_table.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "plugin/cgroupfs/kept_file.h"
#include "plugin/cgroupfs/walk.h"
#include "plugin/runtime/identity.h"

namespace memcg {
namespace {

bool is_ancestor(std::string_view anc, std::string_view path) noexcept {
  if (anc == "/") return path != "/";
  return path.size() > anc.size() && path.starts_with(anc) && path[anc.size()] == '/';
}

}  // namespace

std::string cgroup_dir(const std::string& root, const std::string& path) { return path == "/" ? root : root + "/" + path; }

CgroupTable::CgroupTable() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {}

CgroupTable::~CgroupTable() {
  entries_.clear();  // their fds leave the epoll set as they close, before epoll_ itself
}

void CgroupTable::rescan(const std::string& root, const config::Config& config, PassReport& report, Counters& counters) {
  cgroupfs::WalkResult found = cgroupfs::walk(root, config.collector);
  report.rescanned = true;
  root_ok_ = found.root_ok;
  limited_ = found.limited;
  no_memory_ = found.no_memory;
  for (auto& err : found.errors) report.add_error(std::move(err));
  // The root itself cannot be opened (unmounted, permissions changed,
  // renamed): the walk saw nothing, which says nothing about the cgroups. Keep
  // them; their kept-open fds still read (or report them gone one by one).
  if (!found.root_ok) return;

  std::unordered_map<std::string_view, size_t> old_index;
  old_index.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i)
    if (!entries_[i].gone) old_index.emplace(entries_[i].id->path, i);

  std::vector<CgroupEntry> next;
  next.reserve(found.cgroups.size());
  size_t kept = 0;
  for (auto& f : found.cgroups) {
    auto it = old_index.find(f.path);
    // Same path and inode: the same cgroup, keep its state. A new inode at the
    // same path is a recreated cgroup: its state (and rates) start over.
    if (it != old_index.end() && entries_[it->second].id->inode == f.inode) {
      next.push_back(std::move(entries_[it->second]));
      ++kept;
      continue;
    }
    CgroupEntry e;
    auto identity = runtime::identify(f.path);
    e.id = std::make_shared<const CgroupId>(CgroupId{std::move(f.path), f.inode, f.depth, std::move(identity)});
    e.dir = std::move(f.dir);
    // ENOENT: the file does not exist here (no swap accounting, the root's
    // memory.current) or the cgroup went away since the walk. Anything else
    // (EMFILE above all) is an error the operator must hear about: the
    // cgroup would otherwise be silently missing.
    bool failed = false;
    for (const CgroupFile& file : kCgroupFiles) {
      if (file.access != FileAccess::kept || failed) continue;
      auto fd = cgroupfs::open_at(e.dir.get(), file.name.data());  // the table's names are literals: NUL-terminated
      if (fd.ok()) {
        e.files[static_cast<size_t>(file.kind)] = std::move(fd).value();
      } else if (!is_gone(fd.err())) {
        failed = true;
        ++counters.read_errors[static_cast<size_t>(file.kind)];
        report.add_error({"open", cgroup_dir(root, e.id->path) + "/" + std::string(file.name), fd.err()});
      }
    }
    if (!e.file(FileKind::stat).valid() || failed) continue;  // gone, or not collectable now: retried at the next rescan
    // The kernel notifies pollers of memory.events on every change
    // (memcg_memory_event -> cgroup_file_notify): with the fd in the epoll
    // set the file is read only when it changed. Regular files (fixture
    // trees) cannot be polled (EPERM) and are read every pass instead.
    if (const auto& events = e.file(FileKind::events); events.valid() && epoll_.valid()) {
      epoll_event ev{};
      ev.events = EPOLLPRI;
      ev.data.fd = events.get();
      e.events_polled = ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, events.get(), &ev) == 0;
    }
    next.push_back(std::move(e));
    ++report.added;
  }
  report.removed += entries_.size() - kept;
  entries_ = std::move(next);
  for (auto& e : entries_) e.settings = config.settings_for(e.id->path);
  link_parents();
}

void CgroupTable::link_parents() {
  parents_.assign(entries_.size(), -1);
  std::vector<size_t> stack;
  for (size_t i = 0; i < entries_.size(); ++i) {
    while (!stack.empty() && !is_ancestor(entries_[stack.back()].id->path, entries_[i].id->path)) stack.pop_back();
    parents_[i] = stack.empty() ? -1 : static_cast<int>(stack.back());
    stack.push_back(i);
  }
}

void CgroupTable::poll_events() {
  std::fill(ready_.begin(), ready_.end(), 0);
  // One bounded call: the set is level-triggered, so a flagged fd stays
  // ready until it is read, and calling again until the result is short would
  // return the same fds forever (kernfs flags every memory.events right after
  // open when events happened since boot). Room for every cgroup; anything
  // not consumed now is still ready next pass.
  if (!epoll_.valid() || entries_.empty()) return;
  epoll_events_.resize(entries_.size());
  const int got = ::epoll_wait(epoll_.get(), epoll_events_.data(), static_cast<int>(epoll_events_.size()), 0);
  for (int i = 0; i < got; ++i) {
    const auto fd = static_cast<size_t>(epoll_events_[static_cast<size_t>(i)].data.fd);
    if (fd >= ready_.size()) ready_.resize(fd + 1024, 0);
    ready_[fd] = 1;
  }
}

bool CgroupTable::events_flagged(const CgroupEntry& e) const noexcept {
  const int fd = e.file(FileKind::events).get();
  return fd >= 0 && static_cast<size_t>(fd) < ready_.size() && ready_[static_cast<size_t>(fd)];
}

void CgroupTable::erase_gone(PassReport& report) {
  const size_t before = entries_.size();
  std::erase_if(entries_, [](const CgroupEntry& e) { return e.gone; });
  if (entries_.size() == before) return;
  report.removed += before - entries_.size();
  link_parents();
}

}  // namespace memcg
