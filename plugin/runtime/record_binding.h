// Which cgroup a container record may label, and every identity source's
// records bound into one map for the outputs.
//
// Identity is security: a record's labels apply only to a cgroup its source
// owns. Root's sources (the OCI hook's record files, Docker's and rootful
// podman's Engine APIs) own every cgroup outside the users' systemd
// instances; user UID's own engine (rootless podman on that user's socket)
// owns exactly user.slice/user-UID.slice/user@UID.service and below, the
// subtree systemd delegates to that user. Within what a source owns, a
// record binds to one cgroup: the shallowest one that carries the record's
// id (and, for a hook record, that its cgroupsPath names), so a look-alike
// created further down (".../libpod-<victim id>.scope" in a delegated
// subtree) gets no labels it does not own. Root's engines fill fields a hook
// record left empty only when both bound the same cgroup; a user's answer
// is never merged into another source's record.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "plugin/runtime/oci_record.h"
#include "plugin/runtime/record_store.h"

namespace memcg::runtime {

struct BoundRecord {
  ContainerRecord record;
  uint32_t owner = 0;  // 0: root's source; else the uid whose engine answered
  std::string cgroup;  // the one cgroup it labels, relative to the cgroup2 root
  bool operator==(const BoundRecord&) const = default;
};
struct IdHash {
  using is_transparent = void;  // looked up by string_view: no string per lookup
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
// Container id -> its bound records (one per owner at most, in practice one).
using BoundRecords = std::unordered_multimap<std::string, BoundRecord, IdHash, std::equal_to<>>;

// The uid of the user whose systemd instance holds `cgroup`: the path starts
// with user.slice/user-UID.slice/user@UID.service (the same UID twice, at
// exactly that place: directories of that name deeper down are anyone's to
// create). nullopt for every other cgroup, which root's sources own.
std::optional<uint32_t> cgroup_owner(std::string_view cgroup) noexcept;

// A collected cgroup as binding sees it.
struct BindCandidate {
  std::string_view path;          // relative to the cgroup2 root
  int depth = 0;                  // path components
  std::string_view container_id;  // from the path (identify()); "" for none
  std::string_view runtime;       // from the path: docker, podman, ...
};

// What one Engine API answered: records by id, unbound.
struct EngineAnswers {
  const RecordMap* records = nullptr;
  std::string_view runtime;  // the cgroups it may name: those identify() gives this runtime
  uint32_t owner = 0;        // 0: root's engine; else the user whose socket it is
};

// Binds the hook's records (root's, by their cgroupsPath) and each engine's
// (by id, to the shallowest cgroup of their runtime that their owner owns).
BoundRecords bind_records(std::span<const BindCandidate> cgroups, const RecordMap* hooks,
                          std::span<const EngineAnswers> engines);

// The record that labels `cgroup` (whose path gave `container_id`), or null.
const ContainerRecord* record_for(const BoundRecords& records, std::string_view container_id,
                                  std::string_view cgroup) noexcept;

}  // namespace memcg::runtime
