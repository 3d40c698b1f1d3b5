// The web configuration file (--web.config.file), in the format Prometheus and
// its exporters share (exporter-toolkit's web-config): TLS for the listener,
// optional client certificates, HTTP basic auth with bcrypt hashes, extra
// response headers. Fields this server cannot honour exactly are refused with
// a clear error rather than silently ignored, so a config that works with
// node_exporter either means the same here or does not start.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace memcg::exporter {

enum class ClientAuth { none, verify_if_given, require_and_verify };

struct TlsServerConfig {
  std::string cert_file, key_file;  // PEM; the cert file may carry the chain
  std::string client_ca_file;       // PEM bundle of CAs for client certificates
  ClientAuth client_auth = ClientAuth::none;
  int min_version = 12;             // 10, 11, 12 or 13 (TLS 1.x); Go's default is TLS 1.2
};

struct WebConfigFile {
  std::string path;
  bool tls = false;
  TlsServerConfig tls_server;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;  // http_server_config.headers
};

class WebConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;  // "file:line:col: key: message"
};

// Parses and checks the file (readable cert, key and CA files, valid hashes);
// throws WebConfigError.
WebConfigFile load_web_config(const std::string& path);
WebConfigFile parse_web_config(const std::string& text, const std::string& path);

}  // namespace memcg::exporter
