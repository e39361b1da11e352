// Bootstrap ranks: registration with the root, the eager ring connections, the public calls
// (p2p, ring allGather/barrier), dead-peer checks and abort. The p2p engine is in
// bootstrap_p2p.cc, the root in bootstrap_root.cc, wire formats in bootstrap_wire.h.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/bootstrap_impl.h"
#include "core/log.h"

namespace coccl {

namespace {
std::string errnoString(int e) {
  char buf[128];
  return std::string(strerror_r(e, buf, sizeof(buf)));
}

// Adds the rank and the operation to a message; after abort() every failure reads as abort.
[[noreturn]] void rethrowIn(const Error& e, const std::atomic<bool>& aborted,
                            const std::atomic<int>& abortCode, int rank, const std::string& what) {
  if (aborted.load(std::memory_order_acquire))
    throwAborted(abortCode, format("bootstrap rank %d: %s", rank, what.c_str()));
  throw Error(e.code(), format("bootstrap rank %d: %s: %s", rank, what.c_str(), e.what()));
}
}  // namespace

Bootstrap::Bootstrap(const BootstrapHandle& handle, int rank, int nranks, int64_t timeoutMs)
    : rank_(rank), nranks_(nranks), timeoutMs_(timeoutMs) {
  COCCL_CHECK_ARG(nranks >= 1, "bootstrap: nranks %d < 1", nranks);
  COCCL_CHECK_ARG(rank >= 0 && rank < nranks, "bootstrap: rank %d outside [0, %d)", rank, nranks);
  impl_ = std::make_unique<Impl>(rank, nranks, handle.magic, timeoutMs, aborted_, abortCode_);
  Impl& m = *impl_;
  Deadline dl(timeoutMs);
  const std::string rootStr = handle.root.toString();
  try {
    std::string ifname;
    SocketAddress addr = findInterfaceAddress(&ifname);
    RootRegistration reg;
    std::memset(&reg, 0, sizeof(reg));
    reg.magic = handle.magic;
    reg.rank = rank;
    reg.nranks = nranks;
    m.listener = Socket::listen(addr, &reg.info.addr);
    ::gethostname(reg.info.host, sizeof(reg.info.host) - 1);

    Socket root = Socket::connect(handle.root, dl, &aborted_);
    root.sendAll(&reg, sizeof(reg), dl);
    RootReply rep;
    try {
      root.recvAll(&rep, sizeof(rep), dl);
    } catch (const Error& e) {
      if (e.code() == cocclRemoteError)
        COCCL_THROW(cocclRemoteError,
                    "the root at %s closed the connection before sending the address table "
                    "(wrong unique id, another rank failed, or the root timed out)",
                    rootStr.c_str());
      if (e.code() == cocclSystemError && dl.expired())
        COCCL_THROW(cocclSystemError,
                    "timed out after %lld ms waiting for all %d ranks to register with the "
                    "root at %s",
                    static_cast<long long>(timeoutMs), nranks, rootStr.c_str());
      throw;
    }
    checkRootReply(rep, handle.magic, rank, nranks, rootStr);
    m.peers.resize(static_cast<size_t>(nranks));
    root.recvAll(m.peers.data(), m.peers.size() * sizeof(PeerInfo), dl);
    for (auto& p : m.peers) p.host[sizeof(p.host) - 1] = '\0';
    root.close();

    // Ring connections now, so that checkPeers() always watches two neighbours.
    if (nranks > 1) {
      m.ensureOut((rank + 1) % nranks, dl);
      Impl::RecvOp r{(rank + nranks - 1) % nranks, 0, nullptr, 0, true};
      m.run(nullptr, &r, dl);
    }
    COCCL_INFO(kLogBootstrap, "bootstrap rank %d/%d ready: listening on %s (%s), root %s", rank,
               nranks, reg.info.addr.toString().c_str(), ifname.c_str(), rootStr.c_str());
  } catch (const Error& e) {
    rethrowIn(e, aborted_, abortCode_, rank,
              format("init (%d ranks, root %s)", nranks, rootStr.c_str()));
  }
}

Bootstrap::~Bootstrap() {
  if (!impl_ || aborted_.load(std::memory_order_acquire)) return;
  // A clean departure: tell every peer that opened a connection to us (they watch that
  // connection in checkPeers) so that our EOF is not taken for a crash.
  for (auto& c : impl_->in)
    if (c.sock.valid()) (void)!::send(c.sock.fd(), &kGoodbyeByte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void Bootstrap::send(int peer, uint64_t tag, const void* data, size_t bytes) {
  COCCL_CHECK_ARG(peer >= 0 && peer < nranks_, "bootstrap send: peer %d outside [0, %d)", peer,
                  nranks_);
  COCCL_CHECK_ARG(!(tag & kBootstrapInternalTagBit), "bootstrap send: tag %#llx uses the top bit",
                  static_cast<unsigned long long>(tag));
  COCCL_CHECK_ARG(data || bytes == 0, "bootstrap send: NULL data with %zu bytes", bytes);
  impl_->checkAbort();
  try {
    impl_->sendTo(peer, tag, data, bytes, Deadline(timeoutMs_));
  } catch (const Error& e) {
    rethrowIn(e, aborted_, abortCode_, rank_,
              format("send to rank %d tag %llu", peer, static_cast<unsigned long long>(tag)));
  }
}

void Bootstrap::recv(int peer, uint64_t tag, void* data, size_t bytes) {
  COCCL_CHECK_ARG(peer >= 0 && peer < nranks_, "bootstrap recv: peer %d outside [0, %d)", peer,
                  nranks_);
  COCCL_CHECK_ARG(!(tag & kBootstrapInternalTagBit), "bootstrap recv: tag %#llx uses the top bit",
                  static_cast<unsigned long long>(tag));
  COCCL_CHECK_ARG(data || bytes == 0, "bootstrap recv: NULL data with %zu bytes", bytes);
  impl_->checkAbort();
  try {
    impl_->recvFrom(peer, tag, data, bytes, Deadline(timeoutMs_));
  } catch (const Error& e) {
    rethrowIn(e, aborted_, abortCode_, rank_,
              format("recv from rank %d tag %llu", peer, static_cast<unsigned long long>(tag)));
  }
}

void Bootstrap::allGather(void* data, size_t bytes) {
  COCCL_CHECK_ARG(data || bytes == 0, "bootstrap allGather: NULL data with %zu bytes", bytes);
  impl_->checkAbort();
  if (nranks_ == 1) return;
  Impl& m = *impl_;
  const uint64_t tag = kBootstrapInternalTagBit | (m.agSeq++ & ~kBootstrapInternalTagBit);
  const int next = (rank_ + 1) % nranks_, prev = (rank_ + nranks_ - 1) % nranks_;
  char* base = static_cast<char*>(data);
  Deadline dl(timeoutMs_);
  try {
    for (int step = 0; step < nranks_ - 1; ++step) {
      int sendSlot = (rank_ - step + nranks_) % nranks_;
      int recvSlot = (rank_ - step - 1 + 2 * nranks_) % nranks_;
      Impl::SendOp s{next, {tag, bytes}, base + static_cast<size_t>(sendSlot) * bytes};
      Impl::RecvOp r{prev, tag, base + static_cast<size_t>(recvSlot) * bytes, bytes};
      m.run(&s, &r, dl);
    }
  } catch (const Error& e) {
    rethrowIn(e, aborted_, abortCode_, rank_, format("allGather of %zu bytes", bytes));
  }
}

void Bootstrap::barrier() {
  std::vector<char> slots(static_cast<size_t>(nranks_), 0);
  allGather(slots.data(), 1);
}

bool Bootstrap::tryRecv(int peer, uint64_t tag, void* data, size_t bytes) {
  COCCL_CHECK_ARG(peer >= 0 && peer < nranks_, "bootstrap tryRecv: peer %d outside [0, %d)",
                  peer, nranks_);
  COCCL_CHECK_ARG(!(tag & kBootstrapInternalTagBit),
                  "bootstrap tryRecv: tag %#llx uses the top bit",
                  static_cast<unsigned long long>(tag));
  COCCL_CHECK_ARG(data || bytes == 0, "bootstrap tryRecv: NULL data with %zu bytes", bytes);
  impl_->checkAbort();
  try {
    return impl_->tryRecvFrom(peer, tag, data, bytes);
  } catch (const Error& e) {
    rethrowIn(e, aborted_, abortCode_, rank_,
              format("recv from rank %d tag %llu", peer, static_cast<unsigned long long>(tag)));
  }
}

void Bootstrap::checkPeers() {
  impl_->checkAbort();
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  // Watch the connections this rank opened (this -> peer). A peer never writes into them
  // except the goodbye byte of a clean departure, so EOF without it means the peer died (its
  // process exited or it aborted). With POLLRDHUP the FIN shows even behind that byte.
  // Incoming connections are not watched here: a dead rank's outgoing peer notices it, fails,
  // and its own abort propagates the failure around the ring.
  m.checkFds.clear();
  m.checkPeer.clear();
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_ || m.departed[p] || !m.out[p].valid()) continue;
    m.checkFds.push_back({m.out[p].fd(), static_cast<short>(POLLIN | POLLRDHUP), 0});
    m.checkPeer.push_back(p);
  }
  int rc;
  do {
    rc = ::poll(m.checkFds.data(), m.checkFds.size(), 0);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) COCCL_THROW(cocclSystemError, "poll() failed: %s", errnoString(errno).c_str());
  for (size_t i = 0; rc > 0 && i < m.checkFds.size(); ++i) {
    short ev = m.checkFds[i].revents;
    int p = m.checkPeer[i];
    if (ev & POLLIN) {
      unsigned char buf[16];
      ssize_t n = ::recv(m.checkFds[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
      for (ssize_t k = 0; k < n; ++k)
        if (buf[k] == kGoodbyeByte) m.departed[p] = 1;
      if (m.departed[p]) {
        COCCL_INFO(kLogBootstrap, "bootstrap rank %d: %s left cleanly", rank_, m.who(p).c_str());
        continue;
      }
    }
    if (ev & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL))
      COCCL_THROW(cocclRemoteError, "bootstrap rank %d: %s closed its bootstrap connection%s",
                  rank_, m.who(p).c_str(), kClosedHint);
  }
}

void Bootstrap::abort(cocclResult_t why) {
  if (!aborted_.load(std::memory_order_acquire))
    abortCode_.store(static_cast<int>(why), std::memory_order_relaxed);
  aborted_.store(true, std::memory_order_release);
  if (!impl_) return;
  Impl& m = *impl_;
  // shutdown(), not close(): another thread may be polling these fds right now, and a closed
  // fd number could be reused under it. The destructor closes them.
  std::lock_guard<std::mutex> g(m.mu);
  m.listener.shutdown();
  for (auto& c : m.in) c.sock.shutdown();
  for (auto& s : m.out) s.shutdown();
  for (auto& pd : m.pending) pd.sock.shutdown();
  COCCL_INFO(kLogBootstrap, "bootstrap rank %d: aborted", rank_);
}

}  // namespace coccl
