#include "exporter/http/private_socket.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <vector>

namespace memcg::exporter {
namespace {

std::runtime_error sys_error(const std::string& what, int err) {
  return std::runtime_error(what + ": " + std::strerror(err));
}

// Where the private directory may go, best first: systemd's
// RuntimeDirectory=, the user's runtime directory, TMPDIR, then the usual
// world-writable places (the first this user may write to is taken).
std::vector<std::string> base_dirs() {
  std::vector<std::string> out;
  for (const char* var : {"RUNTIME_DIRECTORY", "XDG_RUNTIME_DIR", "TMPDIR"})
    if (const char* v = std::getenv(var); v && v[0] == '/') {
      std::string d = v;
      if (const size_t colon = d.find(':'); colon != std::string::npos) d.resize(colon);  // RuntimeDirectory= lists several
      out.push_back(d);
    }
  for (const char* d : {"/tmp", "/dev/shm", "/var/tmp"}) out.emplace_back(d);
  return out;
}

// Whether `fd` is a listening TCP socket on 127.0.0.1:`port`.
bool is_listener_on(int fd, int port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.ss_family != AF_INET) return false;
  const auto& in = reinterpret_cast<const sockaddr_in&>(a);
  if (ntohs(in.sin_port) != port || in.sin_addr.s_addr != htonl(INADDR_LOOPBACK)) return false;
  int listening = 0;
  len = sizeof listening;
  return ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening;
}

// Removes the directories of exporters of this user that were killed (no
// one listens on their socket any more), at most a few per start.
void remove_stale(const std::string& base) {
  DIR* d = ::opendir(base.c_str());
  if (!d) return;
  int checked = 0;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "memcg-exporter-http.", 20) != 0 || ++checked > 64) continue;
    const std::string dir = base + "/" + e->d_name, sock = dir + "/http.sock";
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (st.st_mtime + 10 > ::time(nullptr)) continue;  // one starting now has no socket yet
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (sock.size() >= sizeof a.sun_path) continue;
    std::memcpy(a.sun_path, sock.c_str(), sock.size() + 1);
    sys::UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!probe.valid()) break;
    if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 ||
        (errno != ECONNREFUSED && errno != ENOENT))
      continue;  // alive (or busy): another exporter's
    ::unlink(sock.c_str());
    ::rmdir(dir.c_str());
  }
  ::closedir(d);
}

}  // namespace

PrivateSocket::PrivateSocket() {
  std::string tried;
  for (const auto& base : base_dirs()) {
    remove_stale(base);
    std::string tmpl = base + "/memcg-exporter-http.XXXXXX";
    if (::mkdtemp(tmpl.data())) {
      dir_ = tmpl;  // mode 0700
      break;
    }
    tried += (tried.empty() ? "" : ", ") + base + ": " + std::strerror(errno);
  }
  if (dir_.empty()) throw std::runtime_error("cannot make a private directory for the web server (" + tried + ")");
  path_ = dir_ + "/http.sock";
  addr_.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr_.sun_path) {
    ::rmdir(dir_.c_str());
    throw std::runtime_error("the web server's socket path is too long: " + path_);
  }
  std::memcpy(addr_.sun_path, path_.c_str(), path_.size() + 1);
  listener_ = sys::UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener_.valid() || ::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) != 0 ||
      ::listen(listener_.get(), SOMAXCONN) != 0) {
    const int err = errno;
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
    throw sys_error("cannot listen on " + path_, err);
  }
}

PrivateSocket::~PrivateSocket() {
  ::unlink(path_.c_str());
  ::rmdir(dir_.c_str());
}

void PrivateSocket::take_over(int port) {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) throw sys_error("cannot list /proc/self/fd", errno);
  int found = -1;
  while (const dirent* e = ::readdir(d)) {
    const int fd = std::atoi(e->d_name);
    if (fd > 2 && fd != ::dirfd(d) && is_listener_on(fd, port)) {
      found = fd;
      break;
    }
  }
  ::closedir(d);
  if (found < 0) throw std::runtime_error("the web server's listener on 127.0.0.1:" + std::to_string(port) + " was not found");
  // CivetWeb's accept()s must not block its acceptor thread if it polled the
  // old socket: the replacement is non-blocking exactly like the original.
  const int flags = ::fcntl(found, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK)) ::fcntl(listener_.get(), F_SETFL, ::fcntl(listener_.get(), F_GETFL) | O_NONBLOCK);
  if (::dup3(listener_.get(), found, O_CLOEXEC) < 0) throw sys_error("cannot replace the web server's listener", errno);
  listener_.reset();  // CivetWeb's descriptor is the only one now
}

sys::UniqueFd PrivateSocket::connect() const noexcept {
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return fd;
  // A Unix socket connects at once or not at all (EAGAIN: CivetWeb's backlog is full).
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) != 0) return sys::UniqueFd();
  return fd;
}

}  // namespace memcg::exporter
