// A minimal HTTP/1.0 GET for the VM test helpers (static binaries in the
// guest, no HTTP library): the body of a 200 response, or "" for anything else.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

// `headers`: extra request header lines, each ending in \r\n.
inline std::string http_get(int port, const std::string& path, const std::string& headers = "") {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return {};
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n" + headers + "\r\n";
  if (write(fd, req.data(), req.size()) < 0) {
    close(fd);
    return {};
  }
  std::string resp;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) resp.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t body = resp.find("\r\n\r\n");
  if (resp.compare(0, 12, "HTTP/1.1 200") != 0 && resp.compare(0, 12, "HTTP/1.0 200") != 0) return {};
  return body == std::string::npos ? std::string() : resp.substr(body + 4);
}
