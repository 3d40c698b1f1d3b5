#include "exporter/http/tls_server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <stdexcept>

namespace memcg::exporter {
namespace {

std::string openssl_reason() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (!e) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

int protocol_version(int v) noexcept {  // web config's 10..13 -> OpenSSL's
  switch (v) {
    case 10: return TLS1_VERSION;
    case 11: return TLS1_1_VERSION;
    case 13: return TLS1_3_VERSION;
    default: return TLS1_2_VERSION;
  }
}

}  // namespace

std::shared_ptr<SSL_CTX> make_tls_context(const TlsServerConfig& t) {
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) throw std::runtime_error("TLS: " + openssl_reason());
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_min_proto_version(c, protocol_version(t.min_version));
  // Renegotiation is a client's way to make the server work again mid-connection.
  SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  if (SSL_CTX_use_certificate_chain_file(c, t.cert_file.c_str()) != 1)
    throw std::runtime_error("TLS certificate " + t.cert_file + ": " + openssl_reason());
  if (SSL_CTX_use_PrivateKey_file(c, t.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    throw std::runtime_error("TLS key " + t.key_file + ": " + openssl_reason());
  if (SSL_CTX_check_private_key(c) != 1)
    throw std::runtime_error("TLS key " + t.key_file + " does not match the certificate " + t.cert_file + ": " + openssl_reason());
  if (t.client_auth != ClientAuth::none) {
    if (SSL_CTX_load_verify_locations(c, t.client_ca_file.c_str(), nullptr) != 1)
      throw std::runtime_error("TLS client CA " + t.client_ca_file + ": " + openssl_reason());
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(t.client_ca_file.c_str()))
      SSL_CTX_set_client_CA_list(c, names);
    const int mode = t.client_auth == ClientAuth::require_and_verify ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                                                                     : SSL_VERIFY_PEER;
    SSL_CTX_set_verify(c, mode, nullptr);
  }
  return ctx;
}

HelloVerdict client_hello_verdict(const unsigned char* b, size_t n) noexcept {
  constexpr unsigned char kHandshake = 22, kClientHello = 1;
  if (n >= 1 && b[0] != kHandshake) return HelloVerdict::refuse;
  if (n >= 6 && b[5] != kClientHello) return HelloVerdict::refuse;
  if (n < 9) return HelloVerdict::more;
  const size_t length = size_t{b[6]} << 16 | size_t{b[7]} << 8 | b[8];
  return length <= kMaxClientHello ? HelloVerdict::ok : HelloVerdict::refuse;
}

TlsSession::TlsSession(const std::shared_ptr<SSL_CTX>& ctx, int fd) : ctx_(ctx), ssl_(SSL_new(ctx.get())) {
  if (!ssl_ || SSL_set_fd(ssl_, fd) != 1) {
    failed_ = true;
    return;
  }
  SSL_set_accept_state(ssl_);
}

TlsSession::~TlsSession() {
  if (ssl_) SSL_free(ssl_);
}

ssize_t TlsSession::result(int rc, size_t done) {
  want_ = Want::nothing;
  if (rc == 1) return static_cast<ssize_t>(done);
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ: want_ = Want::read; return -1;
    case SSL_ERROR_WANT_WRITE: want_ = Want::write; return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default:
      ERR_clear_error();
      failed_ = true;
      return -1;
  }
}

bool TlsSession::handshake() {
  if (failed_) return false;
  return result(SSL_do_handshake(ssl_), 1) > 0;
}

ssize_t TlsSession::read(char* buf, size_t len) {
  if (failed_) return -1;
  size_t n = 0;
  const int rc = SSL_read_ex(ssl_, buf, len, &n);  // before n is read: argument order is unspecified
  return result(rc, n);
}

ssize_t TlsSession::write(const char* buf, size_t len) {
  if (failed_) return -1;
  size_t n = 0;
  const int rc = SSL_write_ex(ssl_, buf, len, &n);
  return result(rc, n);
}

void TlsSession::shutdown() noexcept {
  if (ssl_ && !failed_ && SSL_is_init_finished(ssl_)) (void)SSL_shutdown(ssl_);
  ERR_clear_error();
}

bool TlsSession::pending() const noexcept { return ssl_ && SSL_pending(ssl_) > 0; }

}  // namespace memcg::exporter
