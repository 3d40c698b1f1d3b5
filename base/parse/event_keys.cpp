#include "base/parse/event_keys.h"

#include <iterator>
#include <string_view>

namespace memcg::parse {
namespace {

constexpr std::string_view kEventNames[] = {"low", "high", "max", "oom", "oom_kill", "oom_group_kill", "sock_throttled"};
static_assert(std::size(kEventNames) == ev_count);

constexpr std::string_view kSwapEventNames[] = {"high", "max", "fail"};
static_assert(std::size(kSwapEventNames) == sev_count);

}  // namespace

const KeyTable& event_key_table() noexcept {
  static const KeyTable table{kEventNames};
  return table;
}

const KeyTable& swap_event_key_table() noexcept {
  static const KeyTable table{kSwapEventNames};
  return table;
}

}  // namespace memcg::parse
