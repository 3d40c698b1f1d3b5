// One record per container for the outputs, from two sources: the OCI hook
// (podman, CRI-O: bound to its cgroup by config.json's cgroupsPath) and the
// Engine API (Docker, podman: says nothing of cgroups). An engine record is
// bound to the outermost cgroup carrying its id, so a look-alike nested
// below (".../docker-<victim id>.scope" in a delegated subtree) does not get
// the victim's name. Where both know a container, the hook's fields win and
// the engine fills the ones it left empty.
#pragma once

#include <string>
#include <unordered_map>

#include "plugin/runtime/record_store.h"

namespace memcg::runtime {

// `base` (the hook's records, or already merged ones) with `engine`'s added.
// `outermost`: container id -> path (relative to the cgroup2 root) of the
// shallowest cgroup with that id.
RecordMap merge_records(RecordMap base, const RecordMap& engine,
                        const std::unordered_map<std::string, std::string>& outermost);

}  // namespace memcg::runtime
