// HTTP basic auth against bcrypt hashes (the web config's basic_auth_users).
// bcrypt costs tens of milliseconds by design, which at every scrape, or under
// a flood of wrong passwords, would be a CPU problem of its own: verified
// credentials are remembered by their SHA-256 (never in clear), and at most
// one bcrypt runs at a time, so a flood costs one core at most.
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace memcg::exporter {

class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);  // user -> bcrypt hash

  bool enabled() const noexcept { return !users_.empty(); }
  // `authorization`: the request's Authorization header value (may be empty).
  bool check(std::string_view authorization);

 private:
  using Digest = std::array<unsigned char, 32>;
  std::map<std::string, std::string> users_;
  std::mutex mu_;            // serializes bcrypt and guards verified_
  std::set<Digest> verified_;  // SHA-256(user, password, hash) of good credentials
  static constexpr size_t kMaxVerified = 256;
};

// RFC 4648 base64 (padding required); false on anything else.
bool base64_decode(std::string_view in, std::string& out);

}  // namespace memcg::exporter
