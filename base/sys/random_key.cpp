#include "base/sys/random_key.h"

#include <sys/random.h>
#include <sys/types.h>

#include <cstdint>

namespace memcg::sys {

text::DigestKey random_digest_key() noexcept {
  text::DigestKey key;
  uint64_t r[3];
  if (::getrandom(r, sizeof r, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof r)) key = {r[0], r[1], r[2]};
  return key;
}

}  // namespace memcg::sys
