// TLS for the connection gate (connection_gate.h), with OpenSSL: the server
// context a web config file describes, and one non-blocking session per
// client connection. The gate terminates TLS itself so that a TLS client
// between requests, or still in its handshake, holds no CivetWeb worker.
#pragma once

#include <sys/types.h>

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
