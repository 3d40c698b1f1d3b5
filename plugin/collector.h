// The collection pass: discovery (every rescan_interval), cheap probes of every
// cgroup, pending-change propagation, the flush decision, memory.stat reads,
// and publication of an immutable Snapshot. All cgroupfs I/O happens on the
// thread that calls run_pass(); readers only call latest().
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "plugin/cache/budget.h"
#include "plugin/cache/pending.h"
#include "plugin/cgroupfs/file_io.h"
#include "plugin/cgroupfs/kept_file.h"
#include "plugin/clock.h"
#include "plugin/error.h"
#include "plugin/runtime/record_store.h"
#include "plugin/snapshot.h"

namespace memcg {

struct PassReport {
  bool rescanned = false;
  bool root_ok = true;           // false: the root could not be opened at the last rescan
  size_t added = 0, removed = 0;  // cgroups that appeared / went away this pass
  uint64_t reads = 0, skips = 0;
  uint64_t limited = 0;          // cgroups over max_cgroups at the last rescan
  uint64_t max_age_violations = 0;  // reads the budget deferred past max_age this pass
  std::vector<IoError> errors;   // real I/O errors (not churn), at most kMaxErrors
  static constexpr size_t kMaxErrors = 16;
};

class Collector {
 public:
  Collector(std::string root, config::Config config, Clock& clock = Clock::system(),
            cgroupfs::FileIo& io = cgroupfs::FileIo::system());
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  PassReport run_pass();

  // The latest published snapshot (an empty one with pass == 0 before the
  // first pass). Safe from any thread; never blocks the collector.
  std::shared_ptr<const Snapshot> latest() const noexcept {
    std::lock_guard lock(latest_mu_);
    return latest_;
  }

  // Takes effect on the next pass, which rescans: new discovery filters apply,
  // every cgroup gets the settings of its (new) matching rule, and cached state
  // of cgroups still present is kept. Call from the thread that runs passes.
  void set_config(config::Config config);
  const config::Config& config() const noexcept { return config_; }
  const std::string& root() const noexcept { return root_; }

  // Any thread: the next pass re-reads memory.stat of every cgroup whose path
  // matches `glob` (reason "forced" unless another reason applies).
  void request_refresh(config::Glob glob);

 private:
  struct Entry;

  void rescan(PassReport& report);
  void link_parents();
  void probe(Entry& e, TimePoint now, cache::ProbeDelta& delta, bool& events_moved, PassReport& report);
  void read_stat(Entry& e, cache::ReadReason reason, PassReport& report);
  void record_error(FileKind file, const Entry& e, int err, PassReport& report);
  void publish(TimePoint started);
  void mark_forced();   // refresh requests from other threads -> Entry::forced
  void poll_events();   // which polled memory.events changed -> ready_
  void count_skip(Entry& e, PassReport& report) noexcept;
  void refresh_records(bool rescanned, TimePoint now, PassReport& report);

  std::string root_;
  config::Config config_;
  Clock& clock_;
  cgroupfs::FileIo& io_;

  std::vector<Entry> entries_;
  bool need_rescan_ = true;
  TimePoint last_rescan_{};
  uint64_t passes_ = 0;
  uint64_t limited_ = 0, no_memory_ = 0;
  bool root_ok_ = true;
  bool host_swap_ = true;  // the host has swap space (asked every pass)

  // Totals exported as counters.
  std::array<uint64_t, kFileKindCount> read_errors_{}, parse_errors_{};
  std::array<uint64_t, cache::kReadReasonCount> reads_{};
  uint64_t skips_ = 0;
  ReadHistogram read_hist_;
  PassHistogram pass_hist_;

  // Reused between passes so the steady state allocates nothing per cgroup.
  std::string buf_;
  parse::LayoutCache stat_layout_, events_layout_;  // one kernel, one key order
  parse::StatValues stat_scratch_;
  parse::EventValues events_scratch_;
  std::vector<int> parents_;
  std::vector<cache::ProbeDelta> deltas_;
  std::vector<uint64_t> change_;
  std::vector<int64_t> scratch_a_, scratch_b_;
  std::vector<unsigned char> moved_;
  std::vector<cache::ReadCandidate> wanted_;
  sys::UniqueFd epoll_;               // memory.events fds that the kernel flags on change
  std::vector<unsigned char> ready_;  // by fd: flagged since the last pass
  std::vector<struct epoll_event> epoll_events_;
  std::vector<unsigned char> chosen_;
  cache::BudgetMeter budget_;
  uint64_t deferred_ = 0;

  std::mutex refresh_mu_;
  std::vector<config::Glob> refresh_;  // guarded by refresh_mu_

  std::shared_ptr<const std::vector<std::shared_ptr<const config::Settings>>> rules_;  // config_.resolved()
  std::unique_ptr<runtime::RecordStore> records_;  // null when containers.records_dir is ""

  // A mutex held only to copy or swap the pointer (tens of nanoseconds), not
  // std::atomic<shared_ptr>: libstdc++ 12 implements that with a lock bit
  // ThreadSanitizer cannot see, and the TSan run is how races get caught here.
  mutable std::mutex latest_mu_;
  std::shared_ptr<const Snapshot> latest_;
};

}  // namespace memcg
