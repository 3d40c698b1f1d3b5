#include "base/sys/open_descriptors.h"

#include <cerrno>
#include <charconv>

namespace memcg::sys {

size_t fd_table_size(std::string_view status) noexcept {
  constexpr std::string_view kKey = "\nFDSize:";
  const size_t at = status.find(kKey);
  if (at == std::string_view::npos) return 0;
  std::string_view v = status.substr(at + kKey.size());
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  size_t n = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  return r.ec == std::errc() ? n : 0;
}

Result<size_t> count_open_descriptors(size_t table_size, std::vector<pollfd>& slots) {
  slots.resize(table_size);
  for (size_t i = 0; i < table_size; ++i) slots[i] = {static_cast<int>(i), 0, 0};
  int n;
  // A zero timeout: the kernel registers no wait queue with any file.
  do n = ::poll(slots.data(), static_cast<nfds_t>(table_size), 0);
  while (n < 0 && errno == EINTR);
  if (n < 0) return Result<size_t>::failure(errno);
  size_t open = 0;
  for (const pollfd& p : slots) open += (p.revents & POLLNVAL) == 0;
  return open;
}

}  // namespace memcg::sys
