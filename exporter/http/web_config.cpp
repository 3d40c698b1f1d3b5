#include "exporter/http/web_config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>

#include "base/sys/read_file.h"

namespace memcg::exporter {
namespace {

constexpr size_t kMaxFileBytes = 4u << 20;  // web configs, keys and certificates are KiB

[[noreturn]] void fail(const std::string& path, const YAML::Node& at, const std::string& key, const std::string& msg) {
  const YAML::Mark m = at.Mark();
  std::string where = path;
  if (!m.is_null()) where += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  throw WebConfigError(where + ": " + key + ": " + msg);
}

std::string scalar(const std::string& path, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(path, n, key, "expected a string");
  return n.as<std::string>();
}

void check_keys(const std::string& path, const YAML::Node& map, const std::string& section,
                std::initializer_list<const char*> known) {
  if (!map.IsMap()) fail(path, map, section.empty() ? "top level" : section, "expected a mapping");
  for (const auto& kv : map) {
    const std::string k = kv.first.as<std::string>();
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    if (!ok) fail(path, kv.first, section.empty() ? k : section + "." + k, "unknown key");
  }
}

// The file must exist and be readable now: a typo should fail at start, not
// at the first TLS handshake.
void check_readable(const std::string& path, const YAML::Node& at, const std::string& key, const std::string& file) {
  if (auto r = sys::read_file(file, kMaxFileBytes); !r.ok()) fail(path, at, key, "cannot read " + r.message());
}

bool is_bcrypt(const std::string& h) {
  // $2a$, $2b$ or $2y$, two-digit cost 04..31, then 53 characters of bcrypt's base64.
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9') return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (size_t i = 7; i < h.size(); ++i) {
    const char c = h[i];
    if (!(c == '.' || c == '/' || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) return false;
  }
  return true;
}

int tls_version(const std::string& path, const YAML::Node& n, const std::string& key) {
  const std::string v = scalar(path, n, key);
  if (v == "TLS12") return 12;
  if (v == "TLS13") return 13;
  // exporter-toolkit takes these too, but Debian's OpenSSL 3 cannot finish
  // such a handshake at its default security level (TLS 1.0 and 1.1 sign
  // with SHA-1): a client that offered them got "internal error", so the
  // file is refused here instead.
  if (v == "TLS10" || v == "TLS11")
    fail(path, n, key, v + " is not supported: OpenSSL 3 at its default security level cannot complete a TLS 1.0 or 1.1 handshake; use TLS12 or TLS13");
  fail(path, n, key, "expected TLS12 or TLS13, got \"" + v + "\"");
}

void parse_tls(const std::string& path, const YAML::Node& t, WebConfigFile& out) {
  check_keys(path, t, "tls_server_config",
             {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version",
              "cipher_suites", "curve_preferences", "prefer_server_cipher_suites", "client_allowed_sans"});
  auto& tls = out.tls_server;
  if (!t["cert_file"] || !t["key_file"]) fail(path, t, "tls_server_config", "cert_file and key_file are both required");
  tls.cert_file = scalar(path, t["cert_file"], "tls_server_config.cert_file");
  tls.key_file = scalar(path, t["key_file"], "tls_server_config.key_file");
  check_readable(path, t["cert_file"], "tls_server_config.cert_file", tls.cert_file);
  check_readable(path, t["key_file"], "tls_server_config.key_file", tls.key_file);
  if (auto n = t["client_auth_type"]) {
    const std::string v = scalar(path, n, "tls_server_config.client_auth_type");
    if (v == "NoClientCert") tls.client_auth = ClientAuth::none;
    else if (v == "VerifyClientCertIfGiven") tls.client_auth = ClientAuth::verify_if_given;
    else if (v == "RequireAndVerifyClientCert") tls.client_auth = ClientAuth::require_and_verify;
    else if (v == "RequestClientCert" || v == "RequireAnyClientCert")
      fail(path, n, "tls_server_config.client_auth_type",
           v + " accepts certificates nobody verified; not supported (use VerifyClientCertIfGiven or RequireAndVerifyClientCert)");
    else
      fail(path, n, "tls_server_config.client_auth_type", "unknown value \"" + v + "\"");
  }
  if (auto n = t["client_ca_file"]) {
    tls.client_ca_file = scalar(path, n, "tls_server_config.client_ca_file");
    check_readable(path, n, "tls_server_config.client_ca_file", tls.client_ca_file);
  }
  if (tls.client_auth != ClientAuth::none && tls.client_ca_file.empty())
    fail(path, t, "tls_server_config.client_ca_file", "required to verify client certificates");
  if (auto n = t["min_version"]) tls.min_version = tls_version(path, n, "tls_server_config.min_version");
  if (auto n = t["max_version"]) {
    if (tls_version(path, n, "tls_server_config.max_version") != 13)
      fail(path, n, "tls_server_config.max_version", "only TLS13 (no upper limit) is supported");
  }
  // Go's cipher suite and curve names have no exact OpenSSL counterpart here;
  // refusing is safer than guessing a mapping.
  for (const char* k : {"cipher_suites", "curve_preferences", "client_allowed_sans"})
    if (auto n = t[k]; n && !(n.IsSequence() && n.size() == 0))
      fail(path, n, std::string("tls_server_config.") + k, "not supported (OpenSSL's defaults apply)");
  if (auto n = t["prefer_server_cipher_suites"]) (void)scalar(path, n, "tls_server_config.prefer_server_cipher_suites");
  out.tls = true;
}

}  // namespace

WebConfigFile parse_web_config(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    std::string where = path;
    if (!e.mark.is_null()) where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    throw WebConfigError(where + ": " + e.msg);
  }
  WebConfigFile out;
  out.path = path;
  if (root.IsNull()) return out;  // an empty file: plain HTTP, no auth
  check_keys(path, root, "", {"tls_server_config", "http_server_config", "basic_auth_users"});
  try {
    if (auto t = root["tls_server_config"]; t && !t.IsNull()) parse_tls(path, t, out);
    if (auto h = root["http_server_config"]; h && !h.IsNull()) {
      check_keys(path, h, "http_server_config", {"http2", "headers"});
      if (auto hs = h["headers"]) {
        if (!hs.IsMap()) fail(path, hs, "http_server_config.headers", "expected a mapping");
        for (const auto& kv : hs) {
          const std::string name = kv.first.as<std::string>();
          const std::string value = scalar(path, kv.second, "http_server_config.headers." + name);
          for (char c : name + value)
            if (c == '\r' || c == '\n') fail(path, kv.first, "http_server_config.headers." + name, "line breaks are not allowed");
          out.headers.emplace_back(name, value);
        }
      }
      // http2: this server speaks HTTP/1.1 only; Prometheus scrapes it either way.
      if (auto n = h["http2"]) (void)scalar(path, n, "http_server_config.http2");
    }
    if (auto u = root["basic_auth_users"]; u && !u.IsNull()) {
      if (!u.IsMap()) fail(path, u, "basic_auth_users", "expected a mapping of user: bcrypt hash");
      for (const auto& kv : u) {
        const std::string user = kv.first.as<std::string>();
        const std::string hash = scalar(path, kv.second, "basic_auth_users." + user);
        if (user.empty() || user.find(':') != std::string::npos)
          fail(path, kv.first, "basic_auth_users", "a user name must be non-empty and contain no ':'");
        if (!is_bcrypt(hash))
          fail(path, kv.second, "basic_auth_users." + user, "not a bcrypt hash ($2a$, $2b$ or $2y$, e.g. from htpasswd -nBC 10)");
        out.basic_auth_users[user] = hash;
      }
    }
  } catch (const YAML::Exception& e) {
    throw WebConfigError(path + ": " + e.msg);
  }
  return out;
}

WebConfigFile load_web_config(const std::string& path) {
  auto text = sys::read_file(path, kMaxFileBytes);
  if (!text.ok()) throw WebConfigError(path + ": cannot read: " + std::strerror(text.err()));
  return parse_web_config(text.value(), path);
}

}  // namespace memcg::exporter
