#include "exporter/http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

namespace memcg::exporter {
namespace {

// The cost field of a bcrypt hash ("$2b$10$..."), or -1.
int bcrypt_cost(const std::string& h) {
  if (h.size() < 7 || h[0] != '$' || h[3] != '$' || h[6] != '$' || h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9') return -1;
  return (h[4] - '0') * 10 + (h[5] - '0');
}

// A hash of a random password at `cost`, compared against for unknown users.
std::string make_dummy_hash(int cost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, salt, sizeof salt)) return {};
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn("memcg-exporter: no such user", salt, data.get(), sizeof *data);
  return out && out[0] == '$' ? std::string(out) : std::string();
}

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();  // ~32 KiB: not on a worker's stack
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof *data);
  if (!out || std::strlen(out) != hash.size()) return false;
  return CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
}

}  // namespace

bool base64_decode(std::string_view in, std::string& out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  out.clear();
  if (in.size() % 4 != 0) return false;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = in[i + static_cast<size_t>(j)];
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        v[j] = 0;
        ++pad;
      } else if (pad || (v[j] = val(c)) < 0) {
        return false;
      }
    }
    const unsigned n = (static_cast<unsigned>(v[0]) << 18) | (static_cast<unsigned>(v[1]) << 12) |
                       (static_cast<unsigned>(v[2]) << 6) | static_cast<unsigned>(v[3]);
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return true;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users, Sleep sleep)
    : users_(std::move(users)), sleep_(std::move(sleep)) {
  if (!sleep_) sleep_ = [](std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); };
  int slowest = 0;
  for (const auto& [user, hash] : users_)
    if (const int c = bcrypt_cost(hash); c >= 4 && c <= 31) slowest = std::max(slowest, c);
  if (slowest) dummy_cost_ = slowest;
  if (users_.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  dummy_hash_ = make_dummy_hash(dummy_cost_);  // one run at that cost: its time is the first measure
  slowest_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

void BasicAuth::keep_verified(BasicAuth& old) {
  std::set<Digest> carried;
  {
    std::lock_guard lock(old.cache_mu_);
    carried = old.verified_;  // digests bind user, password and hash: a changed hash never matches
  }
  std::lock_guard lock(cache_mu_);
  verified_.insert(carried.begin(), carried.end());
}

BasicAuth::Result BasicAuth::check(std::string_view authorization) {
  if (users_.empty()) return Result::ok;
  const Result denied = Result::denied;
  constexpr std::string_view kScheme = "Basic ";
  if (authorization.size() <= kScheme.size() || authorization.size() > 1024) return denied;
  for (size_t i = 0; i < kScheme.size(); ++i)  // the scheme is case-insensitive (RFC 9110)
    if ((authorization[i] | 0x20) != (kScheme[i] | 0x20)) return denied;
  std::string decoded;
  if (!base64_decode(authorization.substr(kScheme.size()), decoded)) return denied;
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return denied;
  const std::string user = decoded.substr(0, colon), password = decoded.substr(colon + 1);
  const auto it = users_.find(user);
  const std::string& hash = it == users_.end() ? dummy_hash_ : it->second;

  Digest d{};
  const std::string key = user + '\0' + password + '\0' + hash;
  unsigned int len = 0;
  if (EVP_Digest(key.data(), key.size(), d.data(), &len, EVP_sha256(), nullptr) != 1 || len != d.size()) return denied;
  if (it != users_.end()) {
    std::lock_guard lock(cache_mu_);
    if (verified_.count(d)) return Result::ok;
  }
  // A bcrypt slot, or "busy" at once: a flood cannot queue up CPU work or
  // hold workers waiting for it.
  int in_progress = verifying_.load();
  do {
    if (in_progress >= kMaxVerifying) return Result::busy;
  } while (!verifying_.compare_exchange_weak(in_progress, in_progress + 1));
  runs_.fetch_add(1);
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok = bcrypt_matches(password, hash) && it != users_.end();
  const int64_t took = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  const int cost = bcrypt_cost(hash);  // the dummy's for an unknown user
  if (cost == dummy_cost_) slowest_ns_ = (3 * slowest_ns_.load() + took) / 4;  // follows the machine's speed
  if (!ok) {
    // The padding holds the slot too: a flood of wrong passwords for a
    // cheaper user holds at most kMaxVerifying workers, padding or not.
    if (const int64_t pad = slowest_ns_.load() - took; cost < dummy_cost_ && pad > 0) sleep_(std::chrono::nanoseconds(pad));
    verifying_.fetch_sub(1);
    return denied;
  }
  verifying_.fetch_sub(1);
  std::lock_guard lock(cache_mu_);
  if (verified_.size() >= kMaxVerified) verified_.clear();
  verified_.insert(d);
  return Result::ok;
}

}  // namespace memcg::exporter
