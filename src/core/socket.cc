// POSIX TCP sockets for the bootstrap. Every fd is non-blocking and every wait is a poll()
// bounded by a Deadline; EINTR is retried; MSG_NOSIGNAL keeps SIGPIPE away.
#include "core/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"

namespace coccl {

namespace {

std::string errnoString(int e) {
  char buf[128];
  // GNU strerror_r returns a pointer (maybe into buf, maybe a static string).
  return std::string(strerror_r(e, buf, sizeof(buf)));
}

std::string peerString(int fd) {
  SocketAddress a;
  std::memset(&a, 0, sizeof(a));
  socklen_t len = sizeof(a.u);
  if (fd < 0 || ::getpeername(fd, &a.u.sa, &len) != 0) return "?";
  return a.toString();
}

void setNoDelay(int fd) {
  int one = 1;
  // Best effort: TCP_NODELAY failing only costs latency.
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Waits until `fd` reports one of `events` (or an error condition) or the deadline passes.
// Throws cocclSystemError on timeout or when poll itself fails.
short waitFd(int fd, short events, const Deadline& deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.remainingMs());
    if (rc < 0) {
      int e = errno;
      if (e == EINTR) continue;
      COCCL_THROW(cocclSystemError, "poll() while waiting to %s failed: %s", what,
                  errnoString(e).c_str());
    }
    if (rc > 0) {
      if (p.revents & POLLNVAL)
        COCCL_THROW(cocclSystemError, "socket closed while waiting to %s", what);
      return p.revents;
    }
    if (deadline.expired())
      COCCL_THROW(cocclSystemError, "timed out waiting to %s (peer %s)", what,
                  peerString(fd).c_str());
  }
}

// Interface name filter in NCCL_SOCKET_IFNAME syntax.
struct IfFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  explicit IfFilter(std::string spec) {
    if (!spec.empty() && spec[0] == '^') {
      exclude = true;
      spec.erase(0, 1);
    }
    if (!spec.empty() && spec[0] == '=') {
      exact = true;
      spec.erase(0, 1);
    }
    size_t start = 0;
    while (start <= spec.size()) {
      size_t comma = spec.find(',', start);
      if (comma == std::string::npos) comma = spec.size();
      std::string n = spec.substr(start, comma - start);
      n.erase(0, n.find_first_not_of(" \t"));
      n.erase(n.find_last_not_of(" \t") + 1);
      if (!n.empty()) names.push_back(n);
      start = comma + 1;
    }
  }
  bool matches(const char* ifname) const {
    bool hit = false;
    for (const auto& n : names) {
      if (exact ? n == ifname : std::strncmp(ifname, n.c_str(), n.size()) == 0) {
        hit = true;
        break;
      }
    }
    return exclude ? !hit : hit;
  }
};

bool isLinkLocal6(const sockaddr_in6* a) {
  return a->sin6_addr.s6_addr[0] == 0xfe && (a->sin6_addr.s6_addr[1] & 0xc0) == 0x80;
}

bool startsWith(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

}  // namespace

// ---- SocketAddress ------------------------------------------------------------------------

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = {0};
  if (u.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &u.sin.sin_addr, host, sizeof(host));
    return format("%s:%u", host, static_cast<unsigned>(ntohs(u.sin.sin_port)));
  }
  if (u.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &u.sin6.sin6_addr, host, sizeof(host));
    return format("[%s]:%u", host, static_cast<unsigned>(ntohs(u.sin6.sin6_port)));
  }
  return "(no address)";
}

socklen_t SocketAddress::length() const {
  if (u.sa.sa_family == AF_INET) return sizeof(sockaddr_in);
  if (u.sa.sa_family == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

SocketAddress findInterfaceAddress(std::string* ifname) {
  const std::string& spec = env().socketIfname;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0)
    COCCL_THROW(cocclSystemError, "getifaddrs() failed: %s", errnoString(errno).c_str());

  // pass 0: IPv4, pass 1: IPv6 (global scope only; link-local needs a scope id)
  auto pick = [&](auto&& accept) -> const ifaddrs* {
    for (int family : {AF_INET, AF_INET6}) {
      for (const ifaddrs* it = list; it; it = it->ifa_next) {
        if (!it->ifa_addr || it->ifa_addr->sa_family != family) continue;
        if (!(it->ifa_flags & IFF_UP)) continue;
        if (family == AF_INET6 && isLinkLocal6(reinterpret_cast<const sockaddr_in6*>(it->ifa_addr)))
          continue;
        if (accept(it)) return it;
      }
    }
    return nullptr;
  };

  const ifaddrs* found = nullptr;
  if (!spec.empty()) {
    IfFilter filter(spec);
    found = pick([&](const ifaddrs* it) { return filter.matches(it->ifa_name); });
    if (!found) {
      ::freeifaddrs(list);
      COCCL_THROW(cocclSystemError,
                  "no up interface with an address matches COCCL_SOCKET_IFNAME=%s", spec.c_str());
    }
  } else {
    found = pick([](const ifaddrs* it) {
      return !(it->ifa_flags & IFF_LOOPBACK) && !startsWith(it->ifa_name, "docker") &&
             !startsWith(it->ifa_name, "virbr");
    });
    if (!found) found = pick([](const ifaddrs* it) { return (it->ifa_flags & IFF_LOOPBACK) != 0; });
    if (!found) {
      ::freeifaddrs(list);
      COCCL_THROW(cocclSystemError, "no usable network interface (not even loopback) is up");
    }
  }

  SocketAddress addr;
  std::memset(&addr, 0, sizeof(addr));
  if (found->ifa_addr->sa_family == AF_INET) {
    std::memcpy(&addr.u.sin, found->ifa_addr, sizeof(sockaddr_in));
    addr.u.sin.sin_port = 0;
  } else {
    std::memcpy(&addr.u.sin6, found->ifa_addr, sizeof(sockaddr_in6));
    addr.u.sin6.sin6_port = 0;
  }
  std::string name = found->ifa_name;
  ::freeifaddrs(list);
  if (ifname) *ifname = name;
  COCCL_TRACE(kLogBootstrap, "bootstrap interface %s %s", name.c_str(), addr.toString().c_str());
  return addr;
}

// ---- Socket -------------------------------------------------------------------------------

Socket::~Socket() {
  close();
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) {
    ::close(fd_);  // never retried on EINTR: on Linux the fd is gone either way
    fd_ = -1;
  }
}

void Socket::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Socket Socket::listen(const SocketAddress& addr, SocketAddress* bound) {
  int family = addr.u.sa.sa_family;
  if (family != AF_INET && family != AF_INET6)
    COCCL_THROW(cocclInvalidArgument, "listen: address family %d is not IPv4 or IPv6", family);
  Socket s(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.valid()) COCCL_THROW(cocclSystemError, "socket() failed: %s", errnoString(errno).c_str());
  int one = 1;
  if (::setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0)
    COCCL_THROW(cocclSystemError, "setsockopt(SO_REUSEADDR) failed: %s",
                errnoString(errno).c_str());
  if (::bind(s.fd_, &addr.u.sa, addr.length()) != 0)
    COCCL_THROW(cocclSystemError, "bind(%s) failed: %s", addr.toString().c_str(),
                errnoString(errno).c_str());
  if (::listen(s.fd_, SOMAXCONN) != 0)
    COCCL_THROW(cocclSystemError, "listen(%s) failed: %s", addr.toString().c_str(),
                errnoString(errno).c_str());
  if (bound) {
    std::memset(bound, 0, sizeof(*bound));
    socklen_t len = sizeof(bound->u);
    if (::getsockname(s.fd_, &bound->u.sa, &len) != 0)
      COCCL_THROW(cocclSystemError, "getsockname() failed: %s", errnoString(errno).c_str());
  }
  return s;
}

Socket Socket::connect(const SocketAddress& addr, const Deadline& deadline) {
  return connect(addr, deadline, nullptr);
}

Socket Socket::connect(const SocketAddress& addr, const Deadline& deadline,
                       const std::atomic<bool>* cancel) {
  int family = addr.u.sa.sa_family;
  if (family != AF_INET && family != AF_INET6)
    COCCL_THROW(cocclInvalidArgument, "connect: address family %d is not IPv4 or IPv6", family);
  auto cancelled = [cancel] { return cancel && cancel->load(std::memory_order_acquire); };
  const int cap = cancel ? 100 : 1000;  // poll slices: short when an abort must be noticed
  int backoffMs = 1;
  int lastErr = 0;
  for (;;) {
    if (cancelled())
      COCCL_THROW(cocclInvalidUsage, "connect to %s aborted", addr.toString().c_str());
    Socket s(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!s.valid())
      COCCL_THROW(cocclSystemError, "socket() failed: %s", errnoString(errno).c_str());
    int err = 0;
    if (::connect(s.fd_, &addr.u.sa, addr.length()) != 0) err = errno;
    if (err == EINPROGRESS || err == EINTR) {
      // The handshake goes on in the kernel; wait for writability, then read its outcome.
      err = ETIMEDOUT;
      for (;;) {
        if (cancelled())
          COCCL_THROW(cocclInvalidUsage, "connect to %s aborted", addr.toString().c_str());
        pollfd p{s.fd_, POLLOUT, 0};
        int rc = ::poll(&p, 1, deadline.remainingMs(cap));
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0)
          COCCL_THROW(cocclSystemError, "poll() during connect failed: %s",
                      errnoString(errno).c_str());
        if (rc > 0) {
          int soErr = 0;
          socklen_t len = sizeof(soErr);
          if (::getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &soErr, &len) != 0) soErr = errno;
          err = soErr;
          break;
        }
        if (deadline.expired()) break;
      }
    }
    if (err == 0) {
      setNoDelay(s.fd_);
      return s;
    }
    lastErr = err;
    bool retry = err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == EAGAIN;
    if (!retry)
      COCCL_THROW(cocclSystemError, "connect to %s failed: %s", addr.toString().c_str(),
                  errnoString(err).c_str());
    if (deadline.expired()) break;
    s.close();
    int ms = std::min(backoffMs, deadline.remainingMs(cap));
    if (ms > 0) ::poll(nullptr, 0, ms);
    backoffMs = std::min(backoffMs * 2, 100);
  }
  COCCL_THROW(cocclSystemError, "connect to %s timed out (last error: %s)", addr.toString().c_str(),
              errnoString(lastErr).c_str());
}

Socket Socket::accept(const Deadline& deadline) const {
  for (;;) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      setNoDelay(fd);
      return Socket(fd);
    }
    int e = errno;
    // accept(2): network errors of the new connection are reported here; treat them as EAGAIN.
    if (e == EINTR || e == ECONNABORTED || e == EPROTO || e == ENETDOWN || e == ENOPROTOOPT ||
        e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == ENETUNREACH)
      continue;
    if (e != EAGAIN && e != EWOULDBLOCK)
      COCCL_THROW(cocclSystemError, "accept() failed: %s", errnoString(e).c_str());
    waitFd(fd_, POLLIN, deadline, "accept a connection");
  }
}

void Socket::sendAll(const void* data, size_t bytes, const Deadline& deadline) const {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd_, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    int e = n < 0 ? errno : EAGAIN;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      waitFd(fd_, POLLOUT, deadline, "send");
      continue;
    }
    if (e == EPIPE || e == ECONNRESET)
      COCCL_THROW(cocclRemoteError, "peer closed the connection (%s)", peerString(fd_).c_str());
    COCCL_THROW(cocclSystemError, "send to %s failed: %s", peerString(fd_).c_str(),
                errnoString(e).c_str());
  }
}

void Socket::recvAll(void* data, size_t bytes, const Deadline& deadline) const {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd_, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      COCCL_THROW(cocclRemoteError, "peer closed the connection (%s)", peerString(fd_).c_str());
    int e = errno;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      waitFd(fd_, POLLIN, deadline, "receive");
      continue;
    }
    if (e == ECONNRESET) COCCL_THROW(cocclRemoteError, "peer closed the connection (reset)");
    COCCL_THROW(cocclSystemError, "recv from %s failed: %s", peerString(fd_).c_str(),
                errnoString(e).c_str());
  }
}

bool Socket::peerClosed() const {
  if (fd_ < 0) return true;
  for (;;) {
    pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
    int rc = ::poll(&p, 1, 0);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) return true;
    if (!(p.revents & POLLIN)) return false;
    char c;
    ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    if (n > 0) return false;  // data pending: the peer is alive as far as we can tell
    int e = errno;
    if (e == EINTR) continue;
    return !(e == EAGAIN || e == EWOULDBLOCK);
  }
}

}  // namespace coccl
