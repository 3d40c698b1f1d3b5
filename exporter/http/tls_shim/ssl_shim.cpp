// libssl.so for CivetWeb's TLS. Debian's CivetWeb 1.15 loads OpenSSL at run
// time with dlopen("libssl.so") and dlsym()s a fixed list of names, one of
// which, SSL_get_peer_certificate, OpenSSL 3 no longer exports (it became a
// macro for SSL_get1_peer_certificate): CivetWeb then calls a null pointer on
// the first TLS connection. This library depends on the real libssl.so.3,
// so every other name resolves there, and adds the one that is missing.
// memcg-exporter finds it through its RPATH before any system libssl.so.
#include <openssl/ssl.h>

#undef SSL_get_peer_certificate
extern "C" X509* SSL_get_peer_certificate(const SSL* s);

extern "C" X509* SSL_get_peer_certificate(const SSL* s) { return SSL_get1_peer_certificate(s); }
