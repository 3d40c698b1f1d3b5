// Container metadata from OCI runtime hooks. The hook (run by podman/CRI-O at
// createRuntime and poststop) turns the OCI state on stdin plus the bundle's
// config.json into a small record file; the daemon reads those records to name
// the containers it finds by cgroup path. Everything here treats its input as
// hostile: sizes and nesting are bounded, ids cannot leave the records dir.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "plugin/runtime/bounded_json.h"

namespace memcg::runtime {

inline constexpr size_t kMaxStateBytes = 64 * 1024;        // OCI state on stdin
inline constexpr size_t kMaxConfigBytes = 4 * 1024 * 1024;  // <bundle>/config.json
inline constexpr size_t kMaxRecordBytes = 16 * 1024;        // a record file

struct ContainerRecord {
  std::string id, name, image, pod, namespace_, pod_uid, cgroups_path;
  // The pod's sandbox (pause) container, by its runtime's own marker:
  // containerd's io.cri-containerd.kind, CRI-O's io.kubernetes.cri-o.ContainerType,
  // dockershim's io.kubernetes.docker.type. The kubelet gives it no container name.
  bool sandbox = false;
  bool operator==(const ContainerRecord&) const = default;
};

// The parts of the OCI state (runtime-spec "State") the hook uses.
struct OciState {
  std::string id, bundle, status;
  int64_t pid = 0;
  ContainerRecord annotations;  // what the state's annotations already tell
};

// A container id usable as a file name: 1-128 of [A-Za-z0-9_.-], not "." or
// "..", not starting with '.'. Anything else (a '/', "..", NUL) is rejected.
bool valid_container_id(std::string_view id) noexcept;

// Fills the empty fields of `r` from an annotations (or labels) object: the
// Kubernetes, CRI-O, containerd CRI and nerdctl keys, first found wins.
void fill_from_annotations(const nlohmann::json& annotations, ContainerRecord& r);

// Parse errors come back as nullopt with `error` set; never an exception.
std::optional<OciState> parse_oci_state(std::string_view json, std::string& error);
// Fills name, image, pod, namespace, pod_uid and cgroups_path from config.json,
// keeping what `state` already had from its annotations.
std::optional<ContainerRecord> record_from_config(const OciState& state, std::string_view config_json, std::string& error);

// Whether a record's cgroups_path (config.json's linux.cgroupsPath) names the
// cgroup at `cgroup` (relative to the cgroup2 root): a record's labels
// belong to that cgroup only, not to any cgroup whose last component carries
// the same id (anyone with a delegated subtree can create
// ".../libpod-<victim id>.scope" under their own container). Notations:
//   systemd  "SLICE:PREFIX:NAME" -> ".../SLICE/PREFIX-NAME.scope" (the scope
//            directly in that slice; where the slice sits is up to systemd);
//            left literal by a runtime without systemd: ".../SLICE:PREFIX:NAME"
//   cgroupfs "/a/b/c" -> "a/b/c", or ending in "/a/b/c" when the collected
//            root is itself a cgroup below the runtime's view.
// An empty cgroups_path (a runtime that set none) cannot be checked: true.
bool cgroups_path_names(std::string_view cgroups_path, std::string_view cgroup) noexcept;

std::string render_record(const ContainerRecord& r);
std::optional<ContainerRecord> parse_record(std::string_view json, std::string& error);

// <dir>/<id>.json written atomically (a temp file, then rename; no symlink
// followed; the directory made if missing), or removed. What went wrong,
// with path and errno, or "".
std::string write_record_file(const std::string& dir, const ContainerRecord& record);
std::string remove_record_file(const std::string& dir, std::string_view id);

// The hook itself: `stage` is "createRuntime" (write <dir>/<id>.json atomically:
// temp file + rename, no symlinks followed) or "poststop" (remove it).
// Returns what to log; the hook always exits 0 so it never fails a container.
std::string run_hook(std::string_view stage, std::string_view state_json, const std::string& records_dir);

}  // namespace memcg::runtime
