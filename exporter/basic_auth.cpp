#include "exporter/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>
#include <memory>

namespace memcg::exporter {
namespace {

// Compared against for unknown users, so the response time does not tell
// which user names exist. Cost 10, like the hashes htpasswd -B makes.
constexpr const char* kDummyHash = "$2b$10$CwTycUXWue0Thq9StjUM0uJ8.zJ.Pk.sDmnT6ru0wa1rcOWqGd1aa";

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

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

bool BasicAuth::check(std::string_view authorization) {
  if (users_.empty()) return true;
  constexpr std::string_view kScheme = "Basic ";
  if (authorization.size() <= kScheme.size() || authorization.size() > 1024) return false;
  for (size_t i = 0; i < kScheme.size(); ++i)  // the scheme is case-insensitive (RFC 9110)
    if ((authorization[i] | 0x20) != (kScheme[i] | 0x20)) return false;
  std::string decoded;
  if (!base64_decode(authorization.substr(kScheme.size()), decoded)) return false;
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  const std::string user = decoded.substr(0, colon), password = decoded.substr(colon + 1);
  const auto it = users_.find(user);
  const std::string& hash = it == users_.end() ? std::string(kDummyHash) : it->second;

  Digest d{};
  const std::string key = user + '\0' + password + '\0' + hash;
  unsigned int len = 0;
  if (EVP_Digest(key.data(), key.size(), d.data(), &len, EVP_sha256(), nullptr) != 1 || len != d.size()) return false;
  std::lock_guard lock(mu_);
  if (it != users_.end() && verified_.count(d)) return true;
  const bool ok = bcrypt_matches(password, hash) && it != users_.end();
  if (ok) {
    if (verified_.size() >= kMaxVerified) verified_.clear();
    verified_.insert(d);
  }
  return ok;
}

}  // namespace memcg::exporter
