// Thin POSIX TCP socket helpers for the bootstrap: interface selection, listen, connect with
// retries, and send/recv of exact byte counts with deadlines (poll-based; never blocks past
// the deadline; EOF from the peer raises cocclRemoteError).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/deadline.h"

namespace coccl {

// An IPv4 or IPv6 socket address, trivially copyable (it travels inside the unique id).
struct SocketAddress {
  union {
    sockaddr sa;
    sockaddr_in sin;
    sockaddr_in6 sin6;
  } u;
  std::string toString() const;
  socklen_t length() const;
};
static_assert(sizeof(SocketAddress) <= 120, "SocketAddress must fit in the unique id");

// Picks the bootstrap interface per COCCL_SOCKET_IFNAME (prefix list, ^ excludes, = exact);
// default: first up non-loopback, non-docker interface, else loopback. Returns its address with
// port 0; `ifname` receives the interface name.
SocketAddress findInterfaceAddress(std::string* ifname);

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void close();
  // Shuts the connection down (both directions) without closing the fd; wakes pollers.
  void shutdown();

  // Listening socket bound to `addr` (port 0 = any); `bound` receives the actual address.
  static Socket listen(const SocketAddress& addr, SocketAddress* bound);
  // Connects with retries (connection refused while the peer is not listening yet) until the
  // deadline.
  static Socket connect(const SocketAddress& addr, const Deadline& deadline);
  // As above; gives up with cocclInvalidUsage as soon as *cancel becomes true (abort).
  static Socket connect(const SocketAddress& addr, const Deadline& deadline,
                        const std::atomic<bool>* cancel);
  // Accepts one connection before the deadline.
  Socket accept(const Deadline& deadline) const;

  void sendAll(const void* data, size_t bytes, const Deadline& deadline) const;
  void recvAll(void* data, size_t bytes, const Deadline& deadline) const;
  // True if the peer closed the connection (EOF pending) or the socket errored; never blocks.
  bool peerClosed() const;

 private:
  int fd_ = -1;
};

}  // namespace coccl
