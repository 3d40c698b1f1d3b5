#include "plugin/cgroup_table.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <unordered_map>

#include "plugin/cgroupfs/kept_file.h"
#include "plugin/cgroupfs/walk.h"
#include "plugin/cgroupfs/walk_skip.h"
#include "base/parse/cgroup_stat.h"
#include "plugin/runtime/identity.h"

namespace memcg {

std::string cgroup_dir(const std::string& root, const std::string& path) { return path == "/" ? root : root + "/" + path; }

namespace {

uint64_t fds_of(const CgroupEntry& e) noexcept {
  uint64_t n = e.dir.valid() ? 1 : 0;
  for (const auto& f : e.files) n += f.valid() ? 1u : 0u;
  return n;
}

}  // namespace

CgroupTable::CgroupTable() : poller_(cgroupfs::make_epoll_poller()), exit_poller_(cgroupfs::make_epoll_poller()) {}

CgroupTable::~CgroupTable() {
  // Their fds leave the epoll set as they close, before the set itself.
  entries_.clear();
  departed_.clear();
}

void CgroupTable::set_event_poller(std::unique_ptr<cgroupfs::EventPoller> poller) { poller_ = std::move(poller); }
void CgroupTable::set_exit_poller(std::unique_ptr<cgroupfs::EventPoller> poller) { exit_poller_ = std::move(poller); }

int CgroupTable::open_directory(const std::string& root, cgroupfs::Found& f, CgroupEntry& e, PassReport& report) {
  const std::string dir = cgroup_dir(root, f.path);
  auto d = cgroupfs::open_at(AT_FDCWD, dir.c_str());
  if (!d.ok()) {
    if (!is_gone(d.err()) && !is_exhaustion(d.err())) report.add_error({"open", dir, d.err()});
    return d.err();
  }
  // The inode of the directory held, not the walk's: the cgroup may have been
  // removed and recreated in between, and the held one is the one read.
  struct stat st{};
  if (::fstat(d.value().get(), &st) != 0) return errno;
  auto identity = runtime::identify(f.path);
  e.id = std::make_shared<const CgroupId>(CgroupId{std::move(f.path), static_cast<uint64_t>(st.st_ino), f.depth, std::move(identity)});
  e.dir = std::move(d).value();
  return 0;
}

// One kind of kept file for every cgroup of the batch, then the next kind,
// not every file of one cgroup and then the next: the kernel allocates an
// open file's structures (its struct file, seq_file, kernfs_open_file) as
// it is opened, so files opened one after another lie together, and a pass
// that reads one kind of every cgroup (memory.current, every probe) then
// walks neighbouring memory. Opened a cgroup at a time, a pread of the same
// memory.current files cost 17-20 % more in the 6.12 guest, and over sysfs
// files 9-15 % more on the build host, a virtual machine that is not
// emulated (docs/performance-history.md, "Files opened kind by kind").
//
// ENOENT: the file does not exist here (no swap accounting, the root's
// memory.current) or the cgroup went away since the walk (commit() tells by
// memory.stat). Exhaustion leaves this open and every later one of the
// batch untried (the next would fail the same way), counted by commit();
// anything else is an error the operator must hear about: the cgroup would
// otherwise be silently missing.
void CgroupTable::open_kind(const std::string& root, const CgroupFile& file, std::vector<Opening>& batch,
                            PassReport& report, Counters& counters) {
  int exhausted = 0;
  for (Opening& o : batch) {
    if (o.err != 0) continue;
    if (exhausted != 0) {
      o.err = exhausted;
      continue;
    }
    CgroupEntry& e = o.e;
    if (file.kind == FileKind::peak && peak_reset_ && open_peak_for_reset(e)) continue;
    auto fd = cgroupfs::open_at(e.dir.get(), file.name.data());  // the table's names are literals: NUL-terminated
    if (fd.ok()) {
      e.files[static_cast<size_t>(file.kind)] = std::move(fd).value();
      continue;
    }
    if (is_gone(fd.err())) continue;
    if (is_exhaustion(fd.err())) {
      exhausted = fd.err();
    } else {
      ++counters.read_errors[static_cast<size_t>(file.kind)];
      report.add_error({"open", cgroup_dir(root, e.id->path) + "/" + std::string(file.name), fd.err()});
    }
    o.err = fd.err();
  }
}

// memory.peak for reading and writing: refused where the daemon may not
// write it (an unprivileged user, a read-only cgroupfs), which the caller
// then opens for reading like any other kept file.
bool CgroupTable::open_peak_for_reset(CgroupEntry& e) {
  auto fd = cgroupfs::open_at(e.dir.get(), file_name(FileKind::peak).data(), O_RDWR);
  if (!fd.ok()) return false;
  e.files[static_cast<size_t>(FileKind::peak)] = std::move(fd).value();
  e.peak_resettable = true;
  return true;
}

size_t CgroupTable::close_kept_if_room(CgroupEntry& e) noexcept {
  size_t closed = 0;
  for (const CgroupFile& file : kCgroupFiles) {
    auto& fd = e.files[static_cast<size_t>(file.kind)];
    if (file.access == FileAccess::kept_if_room && fd.valid()) {
      fd.reset();  // closing it takes it out of the epoll set too
      ++closed;
    }
  }
  e.swap_events_polled = false;  // read every max_age from now on, with systemd-oomd's record
  e.exit_polled = false;         // an exit is then learnt as before: from memory.events or a rescan
  return closed;
}


// A rescan in three parts: what is there (the walk, or the evidence that
// spares it), reconcile it with what is collected (kept, gone, unseen), and
// admit the new cgroups under the fd budget. The shortcuts that let a rescan
// do less on a settled host, and the invariant each relies on:
//  - the count (walk_skip.h): every live cgroup collected and none gone since,
//    so the root's live descendant count equal to the collected leaves no
//    room for a new one;
//  - listings reused by inode and link count (Walker): a directory's link
//    count is 2 + its subdirectories, so an unchanged one names the same
//    children unless one was removed and another created (found gone, listed
//    again in the same walk) or renamed (the same);
//  - the walk's result elided when unchanged (WalkResult::same_as_last):
//    nothing to reconcile when the same cgroups come in the same order;
//  - the last order reused (Walker): the sort skipped for the same paths.
void CgroupTable::rescan(const std::string& root, const config::Config& config, PassReport& report, Counters& counters) {
  const bool settled = is_settled(config);
  report.rescanned = true;
  walk_owed_ = false;
  if (walk_can_be_skipped(settled)) {
    ++skipped_in_a_row_;
    ++counters.rescans_counted;
    report.walk_skipped = true;
    return;
  }
  skipped_in_a_row_ = 0;
  ++counters.rescans_walked;
  cgroupfs::WalkResult found = walk(root, config, settled, report);
  // The root itself cannot be opened (unmounted, permissions changed,
  // renamed): the walk saw nothing, which says nothing about the cgroups. Keep
  // them; their kept-open fds still read (or report them gone one by one).
  if (!found.root_ok) return;
  if (settled && found.same_as_last) return;

  // What the roster was built from: bumped below only if this changes.
  std::vector<std::pair<const CgroupId*, const config::Settings*>> before;
  before.reserve(entries_.size());
  for (const auto& e : entries_) before.emplace_back(e.id.get(), e.settings.get());
  Reconciled r = reconcile(found, report);
  admit(root, found, r, report, counters);
  // Kept cgroups are already in the walk's pre-order; only cgroups added or
  // kept unseen (appended) need the sort, which a quiet rescan skips.
  if (r.next.size() != r.kept_in_order)
    std::sort(r.next.begin(), r.next.end(),
              [](const CgroupEntry& a, const CgroupEntry& b) { return cgroupfs::path_before(a.id->path, b.id->path); });
  entries_ = std::move(r.next);
  for (auto& e : entries_) e.settings = config.settings_for(e.id->path);
  const bool same = before.size() == entries_.size() &&
                    std::equal(before.begin(), before.end(), entries_.begin(), [](const auto& b, const CgroupEntry& e) {
                      return b.first == e.id.get() && b.second == e.settings.get();
                    });
  if (!same) ++generation_;
  settings_from_ = config.resolved();
  last_walk_cgroups_ = found.cgroups.size();
  link_parents();
  count_unwatched();
}

// The table holds exactly what the last walk found, all of it collected (none
// left out, none gone since, none kept unseen) under the same rules: a walk
// that finds the same again has nothing to add, remove, re-sort or re-match.
bool CgroupTable::is_settled(const config::Config& config) const {
  return left_out_.total() == 0 && entries_.size() == last_walk_cgroups_ &&
         std::none_of(entries_.begin(), entries_.end(), [](const CgroupEntry& e) { return e.gone; }) &&
         config.resolved() == settings_from_;
}

// The root's live descendant count says whether a walk can find anything new
// at all (walk_skip.h has the argument and its limits).
bool CgroupTable::walk_can_be_skipped(bool settled) {
  cgroupfs::SkipEvidence evidence;
  evidence.settled = settled;
  evidence.last_walk_complete = last_walk_complete_;
  evidence.skipped_in_a_row = skipped_in_a_row_;
  if (settled && last_walk_complete_) {  // else the reads could not change the answer
    evidence.descendants = read_descendants();
    evidence.collected_descendants = entries_.size() - (!entries_.empty() && entries_.front().id->path == "/" ? 1u : 0u);
    evidence.uncollected_descendants = vouch_uncollected();
  }
  return cgroupfs::may_skip_walk(evidence);
}

// The walk, with what it says about the root and the tree's uncollected parts.
cgroupfs::WalkResult CgroupTable::walk(const std::string& root, const config::Config& config, bool settled,
                                       PassReport& report) {
  cgroupfs::WalkResult found = walker_.walk(root, config.collector, /*elide_unchanged=*/settled);
  root_ok_ = found.root_ok;
  last_walk_complete_ = found.root_ok && found.unknown.empty();
  if (!found.root_ok) {
    root_stat_.reset();
  } else {
    if (!root_stat_.valid()) {
      // Optional: without it (an older kernel, a fixture tree) every rescan walks.
      const std::string path = root + "/cgroup.stat";
      if (auto fd = cgroupfs::open_at(AT_FDCWD, path.c_str()); fd.ok()) root_stat_ = std::move(fd).value();
    }
    watch_uncollected(root);
  }
  limited_ = found.limited;
  no_memory_ = found.no_memory;
  for (auto& err : found.errors) report.add_error(std::move(err));
  return found;
}

// The walk's cgroups against the collected: kept (same path and inode, state
// and all), new (found.cgroups indexes in `fresh`), departed (handed over),
// or unseen (not found, in a part of the tree the walk could not see: kept).
CgroupTable::Reconciled CgroupTable::reconcile(const cgroupfs::WalkResult& found, PassReport& report) {
  std::unordered_map<std::string_view, size_t> old_index;
  old_index.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i)
    if (!entries_[i].gone) old_index.emplace(entries_[i].id->path, i);
  Reconciled r;
  r.next.reserve(found.cgroups.size());
  std::vector<unsigned char> taken(entries_.size(), 0);
  for (size_t i = 0; i < found.cgroups.size(); ++i) {
    auto it = old_index.find(found.cgroups[i].path);
    // Same path and inode: the same cgroup, keep its state. A new inode at the
    // same path is a recreated cgroup: its state (and rates) start over.
    if (it != old_index.end() && entries_[it->second].id->inode == found.cgroups[i].inode) {
      taken[it->second] = 1;
      r.next.push_back(std::move(entries_[it->second]));
      ++r.kept_in_order;
    } else {
      r.fresh.push_back(i);
    }
  }
  // Not found, but in a part of the tree the walk could not see (EMFILE
  // while listing, EACCES, ...): unknown is not removed. Kept as they are;
  // their own kept fds say when they are really gone.
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (taken[i]) continue;
    const auto& path = entries_[i].id->path;
    const bool unseen = !entries_[i].gone && std::any_of(found.unknown.begin(), found.unknown.end(),
                                                         [&](const cgroupfs::Unknown& u) { return u.covers(path); });
    if (unseen) {
      r.next.push_back(std::move(entries_[i]));
    } else {
      departed_.push_back(std::move(entries_[i]));
      ++report.removed;
    }
  }
  return r;
}

// The new cgroups (their paths moved into their entries), shallowest first
// (as max_cgroups picks them): when the
// budget runs out it is the deepest that wait, never a parent while its
// children are collected. Room for the least a cgroup needs comes first:
// the kept_if_room files of the last ones added give theirs back.
void CgroupTable::admit(const std::string& root, cgroupfs::WalkResult& found, Reconciled& r, PassReport& report,
                        Counters& counters) {
  // (std::sort with the path order as tie-break, not std::stable_sort: its
  // temporary buffer is an alloc-dealloc mismatch under ASan in libstdc++ 12.)
  std::sort(r.fresh.begin(), r.fresh.end(), [&](size_t a, size_t b) {
    const int da = found.cgroups[a].depth, db = found.cgroups[b].depth;
    return da != db ? da < db : a < b;
  });
  open_fds_ = 0;
  for (const auto& e : r.next) open_fds_ += fds_of(e);
  left_out_ = {};
  // In rounds: a round's reservations (kMinFdsPerCgroup each) may exceed
  // what its cgroups hold (the root has no memory.current, a kernel without
  // swap accounting no swap files), so where the budget stopped a round the
  // next one tries again with what they hold.
  Admission a;
  while (a.next < r.fresh.size()) {
    const size_t from = a.next;
    std::vector<Opening> batch = open_directories(root, found, r, a, report);
    for (const CgroupFile& file : kCgroupFiles)
      if (file.access == FileAccess::kept) open_kind(root, file, batch, report, counters);
    // Room ran short: the polled extras go to no one added after (see shedding).
    commit(batch, r, report, a.next == r.fresh.size());
    if (a.next == from) {
      // No room for the next: none for the rest.
      (memory_fds_ < rlimit_fds_ ? left_out_.memory_budget : left_out_.fd_budget) += r.fresh.size() - a.next;
      break;
    }
  }
}

// The fresh cgroups from `a.next` that get a place, their directories
// opened, until the budget has no room for the least the next one needs;
// each reserves that in open_fds_ until commit() counts what it holds.
std::vector<CgroupTable::Opening> CgroupTable::open_directories(const std::string& root, cgroupfs::WalkResult& found,
                                                                Reconciled& r, Admission& a, PassReport& report) {
  std::vector<Opening> batch;
  for (; a.next < r.fresh.size(); ++a.next) {
    if (a.exhausted) {
      ++left_out_.fds_exhausted;  // the next open would fail the same way: not tried until the next rescan
      continue;
    }
    // Shedding kept_if_room fds goes on from the last entry down: once room
    // ran short, nothing added after holds them (room for all of them does
    // not come back within the rescan), so each entry is visited once.
    if (open_fds_ + kMinFdsPerCgroup > fd_budget()) {
      if (a.shed_from == SIZE_MAX) a.shed_from = r.next.size();
      while (open_fds_ + kMinFdsPerCgroup > fd_budget() && a.shed_from > 0)
        open_fds_ -= close_kept_if_room(r.next[--a.shed_from]);
    }
    if (open_fds_ + kMinFdsPerCgroup > fd_budget()) break;
    Opening o;
    if (const int err = open_directory(root, found.cgroups[r.fresh[a.next]], o.e, report); err != 0) {
      // Gone since the walk, or unreadable (reported): retried next rescan.
      if (is_exhaustion(err)) {
        a.exhausted = true;
        ++left_out_.fds_exhausted;
      }
      continue;
    }
    open_fds_ += kMinFdsPerCgroup;
    batch.push_back(std::move(o));
  }
  return batch;
}

// Each opened cgroup of the batch into the collected set, with the polled
// extras if `extras` and while the budget has room for them after every
// cgroup's least; one whose opening failed is closed (retried next rescan).
void CgroupTable::commit(std::vector<Opening>& batch, Reconciled& r, PassReport& report, bool extras) {
  for (Opening& o : batch) {
    open_fds_ -= kMinFdsPerCgroup;  // its reservation, for what it holds
    if (o.err == 0 && !o.e.file(FileKind::stat).valid()) o.err = ENOENT;  // gone since the walk
    if (o.err != 0) {
      if (is_exhaustion(o.err)) ++left_out_.fds_exhausted;
      continue;
    }
    CgroupEntry& e = o.e;
    // The polled extras only where the budget has room; one that cannot be
    // opened now is read another way (cgroup_files.h).
    if (extras && open_fds_ + kMaxFdsPerCgroup <= fd_budget())
      for (const CgroupFile& file : kCgroupFiles)
        if (file.access == FileAccess::kept_if_room)
          if (auto fd = cgroupfs::open_at(e.dir.get(), file.name.data()); fd.ok())
            e.files[static_cast<size_t>(file.kind)] = std::move(fd).value();
    register_events(e);
    open_fds_ += fds_of(e);
    r.next.push_back(std::move(e));
    ++report.added;
  }
}

// The kernel notifies pollers of memory.events on every change
// (memcg_memory_event -> cgroup_file_notify): with the fd in the epoll set
// the file is read only when it changed. Regular files (fixture trees)
// cannot be polled (EPERM) and are read every pass instead.
void CgroupTable::register_events(CgroupEntry& e) noexcept {
  e.events_polled = watch(e.file(FileKind::events));
  e.swap_events_polled = watch(e.file(FileKind::swap_events));
  const sys::UniqueFd& exits = e.file(FileKind::cgroup_events);
  e.exit_polled = exits.valid() && exit_poller_->add(exits.get());
}

// Outside the fd budget: one inotify descriptor for all of them. A file
// the cgroup does not have (the root's) needs no watch; any other refusal
// (fs.inotify.max_user_watches, no inotify) only means the limits are read
// every limits_max_age, as they were before watches, and the rest of the
// cgroup's watches are given back.
void CgroupTable::watch_limits(const std::string& root, CgroupEntry& e) noexcept {
  if (e.limits_watch_tried) return;
  e.limits_watch_tried = true;
  const std::string dir = cgroup_dir(root, e.id->path);
  e.limits_watched = true;
  for (size_t k = 0; k < lim_count && e.limits_watched; ++k) {
    int err = 0;
    e.limit_watches[k] = watcher_.add(*io_, e.dir.get(), dir, file_name(kLimitFiles[k]).data(), err);
    if (err != 0 && err != ENOENT) {
      watch_error_ = err;
      e.limits_watched = false;
    }
  }
  if (e.limits_watched) return;
  for (auto& w : e.limit_watches) w.reset();
  ++unwatched_;
}

void CgroupTable::count_unwatched() noexcept {
  unwatched_ = 0;
  for (const auto& e : entries_) unwatched_ += e.limits_watch_tried && !e.limits_watched ? 1u : 0u;
}

void CgroupTable::take_watch_events() {
  watcher_.drain(watch_events_);
  if (!watch_events_.any()) return;
  // An overflow or a failed read lost events: any watched file may have changed.
  const bool all = watch_events_.overflow || watch_events_.error != 0;
  const auto has = [](const std::vector<int>& v, int wd) { return !v.empty() && std::binary_search(v.begin(), v.end(), wd); };
  for (auto& e : entries_) {
    if (!e.limits_watched) continue;
    for (auto& w : e.limit_watches) {
      if (!w.active()) continue;
      if (all || has(watch_events_.changed, w.wd())) e.limits_owed = true;
      if (has(watch_events_.lost, w.wd())) {
        w.forget();
        e.limits_watched = false;  // read every limits_max_age from now on
      }
    }
  }
  if (!watch_events_.lost.empty()) count_unwatched();
}

std::optional<uint64_t> CgroupTable::read_count(sys::UniqueFd& fd) noexcept {
  if (!fd.valid()) return std::nullopt;
  const cgroupfs::ReadResult r = cgroupfs::read_kept(*io_, fd.get(), scratch_);
  if (!r.ok()) {
    fd.reset();  // gone (ENODEV) or unreadable: the next walk says which, and reopens
    return std::nullopt;
  }
  return parse::parse_nr_descendants(r.value());
}

std::optional<uint64_t> CgroupTable::read_descendants() noexcept { return read_count(root_stat_); }

std::optional<uint64_t> CgroupTable::vouch_uncollected() noexcept {
  uint64_t n = 0;
  for (Watched& w : watched_) {
    const auto below = read_count(w.stat);
    if (!below || !w.controllers.valid()) return std::nullopt;
    const cgroupfs::ReadResult r = cgroupfs::read_kept(*io_, w.controllers.get(), scratch_);
    if (!r.ok()) {
      w.controllers.reset();
      return std::nullopt;
    }
    if (parse::lists_controller(r.value(), "memory")) return std::nullopt;
    n += 1 + *below;
  }
  return n;
}

void CgroupTable::watch_uncollected(const std::string& root) {
  const auto& paths = walker_.without_memory();
  watched_.resize(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    Watched& w = watched_[i];
    if (w.path == paths[i] && w.stat.valid() && w.controllers.valid()) continue;
    w.path = paths[i];
    // Two descriptors per such directory, outside the fd budget: there are
    // few (one on a systemd host), and a failed open only means walking.
    const std::string dir = cgroup_dir(root, w.path);
    auto stat = cgroupfs::open_at(AT_FDCWD, (dir + "/cgroup.stat").c_str());
    auto controllers = cgroupfs::open_at(AT_FDCWD, (dir + "/cgroup.controllers").c_str());
    w.stat = stat.ok() ? std::move(stat).value() : sys::UniqueFd();
    w.controllers = controllers.ok() ? std::move(controllers).value() : sys::UniqueFd();
  }
}

void CgroupTable::link_parents() {
  parents_.assign(entries_.size(), -1);
  std::vector<size_t> stack;
  for (size_t i = 0; i < entries_.size(); ++i) {
    while (!stack.empty() && !cgroupfs::path_under(entries_[stack.back()].id->path, entries_[i].id->path)) stack.pop_back();
    parents_[i] = stack.empty() ? -1 : static_cast<int>(stack.back());
    stack.push_back(i);
  }
}

bool CgroupTable::watch(const sys::UniqueFd& fd) noexcept { return fd.valid() && poller_->add(fd.get()); }

bool CgroupTable::poll_events() {
  if (any_ready_) std::fill(ready_.begin(), ready_.end(), 0);
  any_ready_ = false;
  if (entries_.empty()) return false;
  size_t any = 0;
  // Room for memory.events and memory.swap.events of each, then cgroup.events.
  for (const auto& [poller, per_cgroup] : {std::pair{poller_.get(), 2u}, std::pair{exit_poller_.get(), 1u}}) {
    flagged_.resize(per_cgroup * entries_.size());
    const size_t got = poller->flagged(flagged_);
    for (size_t i = 0; i < got; ++i) {
      const auto fd = static_cast<size_t>(flagged_[i]);
      if (fd >= ready_.size()) ready_.resize(fd + 1024, 0);
      ready_[fd] = 1;
    }
    any += got;
  }
  any_ready_ = any > 0;
  return any_ready_;
}

bool CgroupTable::flagged(const CgroupEntry& e, FileKind kind) const noexcept {
  const int fd = e.file(kind).get();
  return any_ready_ && fd >= 0 && static_cast<size_t>(fd) < ready_.size() && ready_[static_cast<size_t>(fd)];
}

void CgroupTable::erase_gone(PassReport& report) {
  // Most passes lose none: one look at each entry's flag, every pass.
  const auto is_gone = [](const CgroupEntry& e) { return e.gone; };
  const auto first = std::find_if(entries_.begin(), entries_.end(), is_gone);
  if (first == entries_.end()) return;
  const size_t before = entries_.size();
  for (auto it = first; it != entries_.end(); ++it)
    if (it->gone) departed_.push_back(std::move(*it));
  entries_.erase(std::remove_if(first, entries_.end(), is_gone), entries_.end());
  ++generation_;
  // Gone in the pass whose rescan trusted the count: the count may have
  // hidden a cgroup created as this one went (walk_skip.h).
  if (report.walk_skipped) walk_owed_ = true;
  open_fds_ = 0;
  for (const auto& e : entries_) open_fds_ += fds_of(e);
  report.removed += before - entries_.size();
  link_parents();
  count_unwatched();
}

}  // namespace memcg
