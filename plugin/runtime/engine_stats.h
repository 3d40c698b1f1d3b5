// What the Engine API lookups report (the snapshot carries it per engine):
// kept apart from the client so data headers need no thread headers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memcg::runtime {

// The engines asked, each about the containers its cgroups name (the
// runtime label): Docker's socket never hears of podman's ids and back.
inline constexpr size_t kEngineCount = 2;
inline constexpr std::string_view kEngines[kEngineCount] = {"docker", "podman"};

// The index in kEngines of the engine that runs containers of `runtime` (an
// Identity::runtime), or kEngineCount for none.
inline size_t engine_of(std::string_view runtime) noexcept {
  size_t k = 0;
  while (k < kEngineCount && kEngines[k] != runtime) ++k;
  return k;
}

enum class LookupResult : uint8_t { ok, not_found, error };
inline constexpr size_t kLookupResultCount = 3;

struct EngineStats {
  std::array<uint64_t, kLookupResultCount> lookups{};  // by LookupResult, since start
  size_t cached = 0;                                   // ids with an answer kept
};

// containerd's client (containerd_client.h).
struct ContainerdStats {
  std::array<uint64_t, kLookupResultCount> lookups{};  // Get calls after create events, by result
  uint64_t lists_ok = 0, lists_failed = 0;             // whole lists (start, reconnect, resync)
  uint64_t events = 0;                                 // container events heard
  size_t cached = 0;                                   // containers named now
  bool connected = false;                              // the event stream is up and the last list succeeded
};

}  // namespace memcg::runtime
