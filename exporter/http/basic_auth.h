// HTTP basic auth against bcrypt hashes (the web config's basic_auth_users).
// bcrypt costs tens of milliseconds by design, which at every scrape, or under
// a flood of wrong passwords, would be a CPU problem of its own: verified
// credentials are remembered by their SHA-256 (never in clear) and checked
// without waiting for any bcrypt, and at most kMaxVerifying bcrypt runs go
// on at once; beyond that a check answers `busy` at once (HTTP 429) instead
// of queueing, so a flood costs that many cores at most and never delays a
// client whose credentials were verified before.
//
// A failed check takes as long whoever the user is: unknown users are checked
// against a hash of the slowest configured cost, and a failure against a
// cheaper user's hash is padded to the time a check at that cost took (so
// timing tells neither which users exist nor their costs), inside its
// bcrypt slot: padding counts against kMaxVerifying like bcrypt itself.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace memcg::exporter {

class BasicAuth {
 public:
  using Sleep = std::function<void(std::chrono::nanoseconds)>;
  // users: user -> bcrypt hash. `sleep` pads failed checks (injected by tests).
  explicit BasicAuth(std::map<std::string, std::string> users, Sleep sleep = {});

  enum class Result { ok, denied, busy };

  bool enabled() const noexcept { return !users_.empty(); }
  // `authorization`: the request's Authorization header value (may be empty).
  Result check(std::string_view authorization);

  // bcrypt runs in progress, and since start (tests).
  int verifying() const noexcept { return verifying_.load(); }
  uint64_t bcrypt_runs() const noexcept { return runs_.load(); }
  // The cost of the hash unknown users are checked against: the slowest of
  // the configured hashes.
  int dummy_cost() const noexcept { return dummy_cost_; }
  // How long a check at that cost takes, as last measured.
  std::chrono::nanoseconds slowest() const noexcept { return std::chrono::nanoseconds(slowest_ns_.load()); }
  // Credentials `old` verified stay verified here where the user's hash is
  // the same (a reload does not send every client back to bcrypt).
  void keep_verified(BasicAuth& old);

  static constexpr int kMaxVerifying = 2;

 private:
  using Digest = std::array<unsigned char, 32>;
  std::map<std::string, std::string> users_;
  std::string dummy_hash_;
  int dummy_cost_ = 10;
  std::atomic<int64_t> slowest_ns_{0};
  Sleep sleep_;
  std::mutex cache_mu_;        // guards verified_ only: never held across bcrypt
  std::set<Digest> verified_;  // SHA-256(user, password, hash) of good credentials
  std::atomic<int> verifying_{0};
  std::atomic<uint64_t> runs_{0};
  static constexpr size_t kMaxVerified = 256;
};

// RFC 4648 base64 (padding required); false on anything else.
bool base64_decode(std::string_view in, std::string& out);

}  // namespace memcg::exporter
