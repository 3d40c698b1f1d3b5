// TLS for the connection gate (connection_gate.h), with OpenSSL: the server
// context a web config file describes, and one non-blocking session per
// client connection. The gate terminates TLS itself so that a TLS client
// between requests, or still in its handshake, holds no worker.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include <memory>
#include <string>

#include "exporter/http/web_config.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace memcg::exporter {

// The certificate (with its chain) and key, the minimum version, client
// certificate verification against the client CA. Throws std::runtime_error
// naming the file and OpenSSL's reason (a key that does not match its
// certificate, say).
std::shared_ptr<SSL_CTX> make_tls_context(const TlsServerConfig& t);

// What the first bytes a TLS client sent say of its ClientHello, before
// OpenSSL reads any: OpenSSL reserves the length a ClientHello announces (up
// to 128 KiB) as soon as it has read the handshake header, so 1,024
// connections announcing the most took 200 MB before any check ran.
//   more    fewer than the 9 bytes of record and handshake header so far
//   ok      a handshake record holding a ClientHello of at most kMaxClientHello
//   refuse  anything else (not TLS, SSLv2's format, a longer ClientHello)
enum class HelloVerdict { more, ok, refuse };
inline constexpr size_t kMaxClientHello = 16384;  // browsers' and Prometheus' are 0.5-2 KB, post-quantum ones included
HelloVerdict client_hello_verdict(const unsigned char* first, size_t n) noexcept;

// One connection's session on a non-blocking socket.
class TlsSession {
 public:
  TlsSession(const std::shared_ptr<SSL_CTX>& ctx, int fd);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // What an operation needs before it can go on.
  enum class Want { nothing, read, write };
  // Handshake: true when done; false with want() set to wait, or failed().
  bool handshake();
  // Like recv/send: bytes moved (> 0), 0 at the peer's end of stream, -1 with
  // want() set (would block) or failed() set (broken session).
  ssize_t read(char* buf, size_t len);
  ssize_t write(const char* buf, size_t len);
  // Sends close_notify once; no wait for the peer's.
  void shutdown() noexcept;
  // Decrypted bytes OpenSSL holds that the socket will not signal again.
  bool pending() const noexcept;

  Want want() const noexcept { return want_; }
  bool failed() const noexcept { return failed_; }

 private:
  ssize_t result(int rc, size_t done);
  std::shared_ptr<SSL_CTX> ctx_;  // kept while the session lives (a reload swaps the gate's)
  SSL* ssl_ = nullptr;
  Want want_ = Want::nothing;
  bool failed_ = false;
};

}  // namespace memcg::exporter
