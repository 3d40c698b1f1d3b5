#include "plugin/snapshot_json.h"

#include "plugin/json_writer.h"

namespace memcg {
namespace {

template <size_t N>
void counters(JsonWriter& w, const parse::FlatKeyed<N>* v, const parse::KeyTable& table) {
  if (!v) {
    w.null();
    return;
  }
  w.begin_object();
  for (size_t k = 0; k < N; ++k)
    if (auto x = v->get(k)) w.key(table.name(k)).value(*x);
  for (const auto& u : v->unknown) w.key(u.name).value(u.value);
  w.end_object();
}

// The event files as the kernel printed them (keys it adds included), and
// systemd-oomd's record; null where the cgroup has no such file.
void event_blocks(JsonWriter& w, const MemoryEvents* ev) {
  w.key("events");
  counters(w, ev ? &ev->events : nullptr, parse::event_key_table());
  w.key("events_local");
  counters(w, ev && ev->local ? &*ev->local : nullptr, parse::event_key_table());
  w.key("swap_events");
  counters(w, ev && ev->swap ? &*ev->swap : nullptr, parse::swap_event_key_table());
  w.key("oomd");
  if (ev && (ev->oomd.ooms || ev->oomd.kills)) {
    w.begin_object();
    w.key("ooms").value(ev->oomd.ooms.value_or(0));
    w.key("kills").value(ev->oomd.kills.value_or(0));
    w.end_object();
  } else {
    w.null();
  }
}

template <typename T>
void opt(JsonWriter& w, std::string_view k, const std::optional<T>& v) {
  w.key(k);
  if (v)
    w.value(*v);
  else
    w.null();
}

void psi_line(JsonWriter& w, std::string_view k, const parse::PsiLine& l) {
  w.key(k);
  if (!l.present) {
    w.null();
    return;
  }
  w.begin_object();
  w.key("avg10").value(l.avg10).key("avg60").value(l.avg60).key("avg300").value(l.avg300);
  w.key("total_seconds").value(static_cast<double>(l.total_us) / 1e6);
  w.end_object();
}

void reasons(JsonWriter& w, const std::array<uint64_t, cache::kReadReasonCount>& r) {
  w.begin_object();
  for (auto reason : cache::kReadReasons) w.key(cache::to_string(reason)).value(r[static_cast<size_t>(reason)]);
  w.end_object();
}

void stat_values(JsonWriter& w, const StatRecord& rec, const config::StatFilter& filter) {
  w.key("stat").begin_object();
  for (size_t k = 0; k < parse::kStatKeyCount; ++k)
    if (rec.values->present.test(k) && filter.allows(k)) w.key(parse::stat_keys()[k].name).value(rec.values->values[k]);
  for (const auto& u : rec.values->unknown)
    if (filter.allows_unknown(u.name)) w.key(u.name).value(u.value);
  w.end_object();
  w.key("stat_rates").begin_object();
  for (size_t k = 0; k < parse::kStatKeyCount; ++k) {
    if (!filter.allows(k)) continue;
    if (const auto r = rec.rate(k)) w.key(parse::stat_keys()[k].name).value(*r);
  }
  w.end_object();
}

void identity(JsonWriter& w, const Snapshot& snap, const CgroupId& id) {
  w.key("identity").begin_object();
  for (std::string_view label : {"runtime", "container_id", "pod_uid", "qos_class", "unit", "container_name", "image", "pod",
                                 "namespace"})
    w.key(label).value(snap.identity(id, label));
  w.end_object();
}

// The single-value files' keys are their labels in cgroup_files.h, as the
// limits' are below.
void memory_block(JsonWriter& w, const CgroupView& c) {
  const ProbeValues& p = c.probe;
  w.key("memory").begin_object();
  opt(w, cgroup_file(FileKind::current).label, p.current);
  opt(w, cgroup_file(FileKind::swap_current).label, p.swap);
  std::optional<uint64_t> peak;
  if (c.stat) peak = c.stat->peak;
  opt(w, cgroup_file(FileKind::peak).label, peak);
  opt(w, "current_bytes_per_second", p.current_rate);
  w.end_object();
}

void limits_block(JsonWriter& w, const CgroupView& c) {
  w.key("limits");
  if (!c.stat) {
    w.null();
    return;
  }
  w.begin_object();
  for (size_t k = 0; k < lim_count; ++k) {
    const auto& l = c.stat->limits[k];
    w.key(limit_name(static_cast<LimitKind>(k)));
    if (!l)
      w.null();
    else if (l->unlimited)
      w.value("max");
    else
      w.value(l->value);
  }
  w.end_object();
}

void pressure_block(JsonWriter& w, const ProbeValues& p) {
  w.key("pressure");
  if (!p.has_psi) {
    w.null();
    return;
  }
  w.begin_object();
  psi_line(w, "some", p.psi.some);
  psi_line(w, "full", p.psi.full);
  w.end_object();
}

// How old the cached values are and what it cost to read them.
void freshness_and_cost(JsonWriter& w, const CgroupView& c, TimePoint now) {
  w.key("freshness").begin_object();
  const auto age = c.stat_age(now);
  w.key("age_seconds");
  if (age) w.value(to_seconds(*age)); else w.null();
  w.key("max_age_seconds").value(to_seconds(c.settings->max_age));
  w.key("pending_change_bytes").value(c.pending);
  w.key("threshold_bytes").value(c.settings->threshold);
  w.end_object();

  w.key("reads");
  reasons(w, c.reads);
  w.key("skips").value(c.skips);
  w.key("cost").begin_object();
  w.key("read_seconds").value(to_seconds(c.read_wall));
  w.key("read_cpu_seconds").value(to_seconds(c.read_cpu));
  w.end_object();
}

void cgroup(JsonWriter& w, const Snapshot& snap, const CgroupView& c, TimePoint now) {
  w.begin_object();
  w.key("path").value(c.id->path);
  w.key("inode").value(c.id->inode);
  w.key("depth").value(c.id->depth);
  w.key("rule").value(c.settings->source);
  identity(w, snap, *c.id);
  memory_block(w, c);
  limits_block(w, c);
  event_blocks(w, c.probe.events.get());
  pressure_block(w, c.probe);
  if (c.stat) {
    stat_values(w, *c.stat, c.settings->stats);
  } else {
    w.key("stat").null();
    w.key("stat_rates").null();
  }
  freshness_and_cost(w, c, now);
  w.end_object();
}

void per_file(JsonWriter& w, const std::array<uint64_t, kFileKindCount>& counts) {
  w.begin_object();
  for (size_t f = 0; f < kFileKindCount; ++f) w.key(file_name(static_cast<FileKind>(f))).value(counts[f]);
  w.end_object();
}

}  // namespace

void render_snapshot_json(const Snapshot& snap, TimePoint now, std::string& out, bool pretty) {
  JsonWriter w(out, pretty);
  w.begin_object();
  w.key("root").value(snap.root);
  w.key("pass").value(snap.pass);
  w.key("pass_duration_seconds").value(to_seconds(snap.pass_duration));
  w.key("cgroups_count").value(static_cast<uint64_t>(snap.cgroups.size()));
  w.key("cgroups_limited").value(snap.cgroups_limited);
  w.key("cgroups_without_memory").value(snap.cgroups_no_memory);
  w.key("reads");
  reasons(w, snap.reads);
  w.key("skips").value(snap.skips);
  w.key("file_reads");
  per_file(w, snap.file_reads);
  w.key("read_errors");
  per_file(w, snap.read_errors);
  w.key("parse_errors");
  per_file(w, snap.parse_errors);
  w.key("cgroups").begin_array();
  for (const auto& c : snap.cgroups) cgroup(w, snap, c, now);
  w.end_array();
  w.end_object();
  if (pretty) out.push_back('\n');
}

}  // namespace memcg
