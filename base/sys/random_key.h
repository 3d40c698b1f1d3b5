// A digest key (base/text/digest.h) drawn from the kernel's entropy, one per
// user: the bytes a cgroup's counters or a scrape's values make cannot then
// be chosen to collide with the previous ones.
#pragma once

#include "base/text/digest.h"

namespace memcg::sys {

// Without entropy (a kernel that refuses getrandom, or early in boot: it is
// drawn without waiting), the fixed default key: a digest still tells
// change; it is only guessable.
text::DigestKey random_digest_key() noexcept;

}  // namespace memcg::sys
