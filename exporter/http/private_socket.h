// Where CivetWeb listens: a Unix socket in a directory only the exporter's
// user may enter, so that no other local user (or hostNetwork pod) can reach
// a worker around the connection gate. CivetWeb 1.15 as Debian builds it
// listens on TCP only; it starts on an ephemeral loopback port, and its
// listening descriptor is then replaced (dup3) by the private socket's:
// CivetWeb's acceptor polls and accepts the same descriptor number, now
// serving connections only the gate can make. The TCP port closes with it.
#pragma once

#include <sys/un.h>

#include <string>

#include "base/sys/unique_fd.h"

namespace memcg::exporter {

class PrivateSocket {
 public:
  // Makes a 0700 directory under $RUNTIME_DIRECTORY, $XDG_RUNTIME_DIR,
  // $TMPDIR, /tmp, /dev/shm or /var/tmp (the first that takes it), with a
  // listening socket "http.sock" in it. Throws std::runtime_error naming
  // each place tried and why it failed.
  PrivateSocket();
  ~PrivateSocket();  // removes the socket and the directory
  PrivateSocket(const PrivateSocket&) = delete;
  PrivateSocket& operator=(const PrivateSocket&) = delete;

  // Puts the listening socket in place of the TCP listener on 127.0.0.1:`port`
  // among this process's descriptors. Throws when there is none.
  void take_over(int port);

  // A new non-blocking connection to it, or an invalid fd with errno set.
  sys::UniqueFd connect() const noexcept;
  const std::string& path() const noexcept { return path_; }

 private:
  std::string dir_, path_;
  sockaddr_un addr_{};
  sys::UniqueFd listener_;
};

}  // namespace memcg::exporter
