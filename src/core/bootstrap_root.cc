// The bootstrap root: a listening socket served by one detached thread per communicator. It
// collects nranks registrations (each on its own connection), answers every rank with the
// address table and exits. It gives up (closing everything, so that waiting ranks fail fast)
// when its timeout passes or when a registered rank leaves before the table went out.
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <system_error>
#include <mutex>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"

namespace coccl {

namespace {

// Connections that have not completed a registration: at most kMaxPending are kept. To make
// room (or when out of descriptors) the oldest one that has been silent for kStaleMs is closed
// (a rank sends its registration right after connecting, so that one is a stranger); with
// none that old, accepting pauses for kAcceptPauseMs and the newcomers wait in the kernel's
// backlog, costing no descriptor.
constexpr size_t kMaxPending = 1024;
constexpr int64_t kStaleMs = 500;
constexpr int kAcceptPauseMs = 50;

struct RootConn {
  Socket sock;
  RootRegistration reg;
  size_t got = 0;
  std::chrono::steady_clock::time_point since;  // accepted at
};

// Closes the oldest stale pending connection; false if none is stale.
bool evictStale(std::vector<RootConn>& pending) {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = pending.begin(); it != pending.end(); ++it)
    if (now - it->since >= std::chrono::milliseconds(kStaleMs)) {
      pending.erase(it);
      return true;
    }
  return false;
}

// Accepts what the listener has, within the bounds above.
void acceptSome(const Socket& listener, std::vector<RootConn>& pending, const std::string& where,
                bool* paused) {
  for (;;) {
    if (pending.size() >= kMaxPending && !evictStale(pending)) {
      *paused = true;
      return;
    }
    int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == EINTR || e == ECONNABORTED) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) return;
      if ((e == EMFILE || e == ENFILE) && evictStale(pending)) continue;
      // Out of descriptors with nothing to close, or another failure: try again after a pause
      // (the listener is level-triggered: polling it at once would spin).
      COCCL_WARN("bootstrap root %s: accept failed: %s", where.c_str(), std::strerror(e));
      *paused = true;
      return;
    }
    RootConn c;
    c.sock = Socket(fd);
    std::memset(&c.reg, 0, sizeof(c.reg));
    c.since = std::chrono::steady_clock::now();
    pending.push_back(std::move(c));
  }
}

const char* statusText(int32_t s) {
  switch (s) {
    case kRootBadRank:
      return "rank or nranks out of range";
    case kRootNranksMismatch:
      return "nranks differs from the other ranks'";
    case kRootDuplicateRank:
      return "another process already registered this rank";
    default:
      return "unknown status";
  }
}

void rejectRegistration(RootConn& c, uint64_t magic, int32_t status, int32_t nranks,
                        const std::string& where) {
  c.reg.info.host[sizeof(c.reg.info.host) - 1] = '\0';
  COCCL_WARN("bootstrap root %s: rejected rank %d (nranks %d) from %s: %s", where.c_str(),
             c.reg.rank, c.reg.nranks, c.reg.info.host, statusText(status));
  RootReply rep{magic, status, nranks};
  try {
    c.sock.sendAll(&rep, sizeof(rep), Deadline(1000));
  } catch (const Error&) {
    // the rank is gone already; nothing to tell it
  }
  c.sock.close();
}

// Held by a root thread whenever it is not blocked in poll(), and taken around fork() (a
// pthread_atfork handler): a process that forks while its root thread serves (a parent that
// calls cocclGetUniqueId, then forks its ranks) forks only while that thread sits in poll(),
// never while it is inside malloc / mmap. UCX's memory hooks take a lock there, and a child
// that inherited it held would hang in its first ucp_init.
std::mutex g_rootWork;

void registerForkGuard() {
  static std::once_flag once;
  std::call_once(once, [] {
    ::pthread_atfork([] { g_rootWork.lock(); }, [] { g_rootWork.unlock(); },
                     [] { g_rootWork.unlock(); });
  });
}

// Runs on the root thread; never throws.
void rootMain(Socket listener, uint64_t magic, int64_t timeoutMs, std::string where) {
  std::unique_lock<std::mutex> work(g_rootWork);  // released last, after the locals below
  try {
    Deadline deadline(timeoutMs);
    std::vector<RootConn> pending;  // connected, registration incomplete (oldest first)
    // Registered ranks by rank. A map, not a vector of nranks: nranks is what the first
    // registration claims, and a claim of 2^30 must not size anything (the table is built only
    // once that many ranks really registered).
    std::map<int, RootConn> ranks;
    int nranks = -1;
    int registered = 0;
    std::vector<pollfd> fds;
    bool acceptPaused = false;  // out of fds with nothing to evict: skip the listener one round
    while (nranks < 0 || registered < nranks) {
      if (deadline.expired()) {
        COCCL_WARN("bootstrap root %s: timed out after %lld ms with %d of %d ranks registered",
                   where.c_str(), static_cast<long long>(timeoutMs), registered, nranks);
        return;
      }
      fds.clear();
      fds.push_back({acceptPaused ? -1 : listener.fd(), POLLIN, 0});
      for (auto& c : pending) fds.push_back({c.sock.fd(), POLLIN, 0});
      for (auto& kv : ranks)
        fds.push_back({kv.second.sock.fd(), static_cast<short>(POLLIN | POLLRDHUP), 0});
      work.unlock();
      int rc = ::poll(fds.data(), fds.size(),
                      acceptPaused ? deadline.remainingMs(kAcceptPauseMs) : deadline.remainingMs());
      acceptPaused = false;
      work.lock();
      if (rc < 0 && errno != EINTR) {
        COCCL_WARN("bootstrap root %s: poll failed: %s", where.c_str(), std::strerror(errno));
        return;
      }
      if (rc <= 0) continue;
      // A registered rank has nothing to send until it gets the table: any event means it left.
      size_t idx = 1 + pending.size();
      for (auto& kv : ranks) {
        const RootConn& c = kv.second;
        if (fds[idx++].revents) {
          COCCL_WARN(
              "bootstrap root %s: rank %d (%s) left before all %d ranks registered; "
              "giving up",
              where.c_str(), c.reg.rank, c.reg.info.host, nranks);
          return;
        }
      }
      // Progress partial registrations.
      for (size_t i = 0; i < pending.size(); ++i) {
        if (!fds[1 + i].revents) continue;
        RootConn& c = pending[i];
        char* dst = reinterpret_cast<char*>(&c.reg) + c.got;
        ssize_t n = ::recv(c.sock.fd(), dst, sizeof(c.reg) - c.got, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (n <= 0) {
          COCCL_INFO(kLogBootstrap, "bootstrap root %s: a connection closed before registering",
                     where.c_str());
          c.sock.close();
          continue;
        }
        c.got += static_cast<size_t>(n);
        const WireProgress w = checkWirePrefix(&c.reg, c.got, sizeof(c.reg), magic);
        if (w == WireProgress::BadMagic) {
          COCCL_WARN(
              "bootstrap root %s: dropped a connection with the wrong magic "
              "(not a rank of this communicator)",
              where.c_str());
          c.sock.close();
          continue;
        }
        if (w == WireProgress::Complete) {
          const int32_t r = c.reg.rank;
          const RootStatus st = checkRegistration(
              c.reg, nranks, [&ranks](int q) { return ranks.count(q) != 0; });
          if (st != kRootOk) {
            rejectRegistration(c, magic, st, nranks, where);
          } else {
            if (nranks < 0) nranks = c.reg.nranks;
            c.reg.info.host[sizeof(c.reg.info.host) - 1] = '\0';
            ranks[r] = std::move(c);
            ++registered;
            COCCL_INFO(kLogBootstrap, "bootstrap root %s: rank %d/%d registered from %s",
                       where.c_str(), r, nranks, ranks[r].reg.info.addr.toString().c_str());
          }
        }
      }
      pending.erase(std::remove_if(pending.begin(), pending.end(),
                                   [](const RootConn& c) { return !c.sock.valid(); }),
                    pending.end());
      // Accept new connections.
      if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
        COCCL_WARN("bootstrap root %s: listening socket failed", where.c_str());
        return;
      }
      if (fds[0].revents & POLLIN) acceptSome(listener, pending, where, &acceptPaused);
    }
    listener.close();
    pending.clear();

    // Everyone is here: send the table.
    std::vector<PeerInfo> table(static_cast<size_t>(nranks));
    for (auto& kv : ranks) table[static_cast<size_t>(kv.first)] = kv.second.reg.info;
    RootReply rep{magic, kRootOk, nranks};
    Deadline sendDeadline(timeoutMs);
    for (int r = 0; r < nranks; ++r) {
      try {
        ranks[r].sock.sendAll(&rep, sizeof(rep), sendDeadline);
        ranks[r].sock.sendAll(table.data(), table.size() * sizeof(PeerInfo), sendDeadline);
      } catch (const Error& e) {
        COCCL_WARN("bootstrap root %s: could not send the table to rank %d: %s", where.c_str(), r,
                   e.what());
      }
    }
    COCCL_INFO(kLogBootstrap, "bootstrap root %s: served %d ranks", where.c_str(), nranks);
  } catch (const std::exception& e) {
    COCCL_WARN("bootstrap root %s: %s", where.c_str(), e.what());
  } catch (...) {
    COCCL_WARN("bootstrap root %s: unknown exception", where.c_str());
  }
}

void startRoot(Socket listener, uint64_t magic, const SocketAddress& bound) {
  int64_t timeoutMs = env().timeoutMs;
  std::string where = bound.toString();
  registerForkGuard();
  try {
    std::thread(rootMain, std::move(listener), magic, timeoutMs, where).detach();
  } catch (const std::system_error& e) {
    COCCL_THROW(cocclSystemError, "bootstrap root %s: cannot start its thread: %s", where.c_str(),
                e.what());
  }
  COCCL_INFO(kLogBootstrap, "bootstrap root listening on %s", where.c_str());
}

uint64_t randomMagic() {
  uint64_t m = 0;
  try {
    std::random_device rd;
    m = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  } catch (...) {
  }
  m ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  m ^= static_cast<uint64_t>(::getpid()) << 17;
  return m ? m : 0x636f63636c21ull;
}

}  // namespace

void bootstrapCreateRoot(BootstrapHandle* handle) {
  COCCL_CHECK_ARG(handle != nullptr, "bootstrapCreateRoot: handle is NULL");
  SocketAddress addr = findInterfaceAddress(nullptr);
  SocketAddress bound;
  Socket listener = Socket::listen(addr, &bound);
  std::memset(handle, 0, sizeof(*handle));
  handle->magic = randomMagic();
  handle->root = bound;
  startRoot(std::move(listener), handle->magic, bound);
}

void bootstrapCreateRootAt(const SocketAddress& addr, uint64_t magic) {
  SocketAddress bound;
  Socket listener = Socket::listen(addr, &bound);
  startRoot(std::move(listener), magic, bound);
}

SocketAddress parseHostPort(const std::string& hostPort) {
  std::string host, port;
  if (!hostPort.empty() && hostPort[0] == '[') {
    size_t close = hostPort.find(']');
    if (close == std::string::npos || close + 1 >= hostPort.size() || hostPort[close + 1] != ':')
      COCCL_THROW(cocclInvalidArgument, "'%s' is not [ipv6]:port", hostPort.c_str());
    host = hostPort.substr(1, close - 1);
    port = hostPort.substr(close + 2);
  } else {
    size_t colon = hostPort.rfind(':');
    if (colon == std::string::npos)
      COCCL_THROW(cocclInvalidArgument, "'%s' is not host:port", hostPort.c_str());
    host = hostPort.substr(0, colon);
    port = hostPort.substr(colon + 1);
  }
  char* end = nullptr;
  long p = port.empty() ? -1 : std::strtol(port.c_str(), &end, 10);
  if (host.empty() || p < 1 || p > 65535 || (end && *end != '\0'))
    COCCL_THROW(cocclInvalidArgument, "'%s' is not host:port with a port in 1..65535",
                hostPort.c_str());

  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    COCCL_THROW(cocclInvalidArgument, "cannot resolve '%s': %s", host.c_str(), gai_strerror(rc));
  const addrinfo* pick = res;  // prefer IPv4 (like the interface choice), else the first
  for (const addrinfo* it = res; it; it = it->ai_next)
    if (it->ai_family == AF_INET) {
      pick = it;
      break;
    }
  SocketAddress a;
  std::memset(&a, 0, sizeof(a));
  if (pick->ai_family == AF_INET) {
    std::memcpy(&a.u.sin, pick->ai_addr, sizeof(sockaddr_in));
    a.u.sin.sin_port = htons(static_cast<uint16_t>(p));
  } else if (pick->ai_family == AF_INET6) {
    std::memcpy(&a.u.sin6, pick->ai_addr, sizeof(sockaddr_in6));
    a.u.sin6.sin6_port = htons(static_cast<uint16_t>(p));
  } else {
    ::freeaddrinfo(res);
    COCCL_THROW(cocclInvalidArgument, "'%s' resolves to no IPv4/IPv6 address", host.c_str());
  }
  ::freeaddrinfo(res);
  return a;
}

}  // namespace coccl
