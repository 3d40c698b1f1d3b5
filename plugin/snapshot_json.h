// The snapshot as JSON: what `memcg-exporter --once` prints and the HTTP API
// serves. memory.stat keys are filtered by each cgroup's stats allowlist, the
// same as the metrics. Ages are computed against `now`.
#pragma once

#include <string>

#include "plugin/snapshot.h"

namespace memcg {

void render_snapshot_json(const Snapshot& snap, TimePoint now, std::string& out, bool pretty = true);

}  // namespace memcg
