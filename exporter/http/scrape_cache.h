// The /metrics body of a snapshot, built once and shared by every scrape that
// asks while that snapshot is the latest: the second Prometheus of an HA pair,
// or a human's curl during a scrape, costs no second render or compression.
// Concurrent callers for the same snapshot wait for the one build rather than
// each doing it. Only the latest body is kept, and only in the encoding asked
// for (a gzip scrape keeps the ~10x smaller compressed bytes, not the text).
//
// Across snapshots, the gzip body's head — the memcg_cgroup_info family, a
// quarter of the text — is compressed once and reused for as long as the
// cgroups, their rules, the container records and the removed cgroups still
// served stay the same (compared by the shared roster, records and removed
// views themselves, held here so their addresses cannot be reused); the
// values are rendered per scrape, and of them only the families whose text
// changed since the previous scrape are compressed again
// (stable_families.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/text/buffer.h"
#include "exporter/http/gzip.h"
#include "exporter/http/stable_families.h"
#include "plugin/snapshot.h"

namespace memcg::exporter {

class ScrapeCache {
 public:
  // What a body depends on besides the scrape's own timing: the snapshot
  // (by publication: passes and event wake-ups) and the configuration in
  // force (profile, labels).
  struct Key {
    uint64_t pass = 0;
    const void* config = nullptr;
    bool operator==(const Key&) const = default;
  };
  // The body in two parts: the identity family and the rest (metrics.h:
  // render_identity, render_values).
  struct Render {
    std::function<void(std::string&)> identity;
    // Appends, and pushes where each family begins (none: one family).
    std::function<void(text::Buffer&, std::vector<size_t>& family_starts)> values;
  };
  struct Body {
    std::shared_ptr<const std::string> bytes;
    bool gzip = false;  // false also when compression failed (no memory): served as text
  };

  // The text exposition of `snap` under `key`, or its gzip encoding when
  // `gzip`. `render` is called only for what no earlier call built.
  Body get(const Snapshot& snap, Key key, bool gzip, const Render& render);

  // Forgets a body built for a publication before `pass`, so a superseded body is
  // not kept until the next scrape.
  void drop_before(uint64_t pass);

  // Whether the last build freed or made something large (a values buffer
  // given back, a text body) whose pages are worth returning to the kernel
  // after the response (release_freed_memory); cleared by the call. The
  // buffers a gzip scrape of a tree of up to ~5,000 cgroups needs are kept
  // instead: returned after every scrape, they were faulted in again by the
  // next one (and the passes between), ~200 page faults a scrape at 1,000
  // cgroups.
  bool take_trim_due();

  // Renders, compressions and reused heads so far (tests, benchmarks).
  struct Counts {
    uint64_t renders = 0, compressions = 0, heads_reused = 0;
    uint64_t families_reused = 0;     // value families served from compressed bytes kept...
    uint64_t families_compressed = 0; // ... of which compressed apart when found unchanged
    uint64_t runs_reused = 0;         // the open family's header and runs likewise (stable_families.h)
    uint64_t bytes_reused = 0;        // their text
  };
  Counts counts() const;

 private:
  // What the identity family was rendered from.
  struct HeadSource {
    const void* config = nullptr;
    std::shared_ptr<const Roster> roster;  // the cgroups and their rules, in order
    std::shared_ptr<const runtime::BoundRecords> records;
    std::shared_ptr<const std::vector<CgroupView>> removed;  // removed cgroups' info is in the identity part too
    bool same_as(const Snapshot& snap, const void* config) const;
    void take(const Snapshot& snap, const void* config);
  };

  mutable std::mutex mu_;  // held across a build: concurrent scrapes wait for it
  Key key_;
  std::shared_ptr<const std::string> text_, gzip_;
  HeadSource head_source_;
  std::shared_ptr<const DeflatedPart> head_;
  Counts counts_;
  size_t last_size_ = 0;  // of the last values text: the next one is about as big
  // The values text of a gzip body, kept between scrapes up to
  // kKeptValuesBytes (~5,000 cgroups): a new buffer every scrape was a new
  // mapping whose every page the kernel faulted in and zeroed again, about
  // a tenth of a scrape's CPU. Larger trees give theirs back after each
  // scrape, so the resident size stays bounded. Grown without being zeroed
  // (base/text/buffer.h).
  text::Buffer values_;
  std::vector<size_t> starts_;  // of values_' families
  static constexpr size_t kKeptValuesBytes = 8u << 20;
  StableFamilies families_;  // its tail buffer kept as values_
  std::vector<const DeflatedPart*> parts_;  // the head, then the unchanged families
  DeflateWorkspace deflate_;  // its output buffer kept up to about kKeptValuesBytes, as values_
  // Gives values_ and deflate_'s buffer back once a build grew them past
  // what is kept (both kinds of body, under mu_).
  void keep_buffers_bounded();
  // The builds behind get(), under mu_: the plain text; the gzip body (the
  // identity head kept or made again, the values joined to it, or the plain
  // text when there is no memory to compress).
  Body build_text(const Render& render);
  Body build_gzip(const Snapshot& snap, Key key, const Render& render);
  void refresh_head(const Snapshot& snap, const void* config, const Render& render);
  void render_values(const Render& render);  // into values_ and starts_
  bool zip_values(std::string& out);         // head_, the unchanged families, the rest compressed
  bool trim_due_ = false;
};

}  // namespace memcg::exporter
