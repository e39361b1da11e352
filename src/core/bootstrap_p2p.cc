// The bootstrap's point-to-point engine. One loop (Impl::run) drives every wait: it progresses
// at most one outgoing frame and one wanted incoming frame while it also accepts connections,
// reads hellos and drains every other incoming connection into per-(peer, tag) queues.
// Draining means two ranks sending large messages to each other never deadlock, and
// allGather's send and receive progress together. Wire formats: core/bootstrap_wire.h.
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/bootstrap_impl.h"
#include "core/log.h"

namespace coccl {

namespace {
constexpr int kPollSliceMs = 100;  // how often a blocked wait looks at the abort flag
constexpr size_t kFrameHeader = 2 * sizeof(uint64_t);
constexpr uint64_t kQueueSlice = 1 << 20;  // a queued frame's buffer grows by at most this
// Accepted connections without a complete hello: at most kMaxPending are kept. To make room
// (or when out of descriptors) the oldest one silent for kStaleMs is closed (a rank sends its
// hello right after connecting: that one is a stranger); with none that old the listener is
// left out of one poll of kAcceptPauseMs and newcomers wait in the kernel's backlog.
constexpr size_t kMaxPending = 256;
constexpr int64_t kStaleMs = 500;
constexpr int kAcceptPauseMs = 20;

std::string errnoString(int e) {
  char buf[128];
  return std::string(strerror_r(e, buf, sizeof(buf)));
}
}  // namespace

void Bootstrap::Impl::ensureOut(int p, const Deadline& dl) {
  if (out[p].valid()) {
    if (out[p].peerClosed()) throwClosed(p);
    return;
  }
  Socket s = Socket::connect(peers[p].addr, dl, &aborted);
  PeerHello h{magic, rank, nranks};
  s.sendAll(&h, sizeof(h), dl);
  adopt(out[p], std::move(s));
  checkAbort();
}

// Completes `r` from the queue if a message is there. Size mismatch: cocclInternalError,
// the message stays queued.
bool Bootstrap::Impl::tryQueue(RecvOp& r) {
  auto it = queued.find({r.peer, r.tag});
  if (it == queued.end() || it->second.empty()) return false;
  std::vector<char>& m = it->second.front();
  if (m.size() != r.bytes)
    COCCL_THROW(cocclInternalError, "message from %s with tag %llu has %zu bytes, expected %zu",
                who(r.peer).c_str(), static_cast<unsigned long long>(r.tag), m.size(), r.bytes);
  if (r.bytes) std::memcpy(r.data, m.data(), r.bytes);
  it->second.pop_front();
  if (it->second.empty()) queued.erase(it);
  r.done = true;
  return true;
}

// Reads whatever connection p has without blocking. Frames go to `want`'s buffer when they
// are what it waits for, else to the queue. Marks the connection closed on EOF / error.
void Bootstrap::Impl::pump(int p, RecvOp* want) {
  InConn& c = in[p];
  const bool target = want && !want->connectOnly && want->peer == p;
  while (c.sock.valid() && !c.closed) {
    if (target && want->done) return;
    if (c.inPayload && c.got == c.hdr[1]) {  // frame complete
      c.inPayload = false;
      if (c.toUser) {
        c.toUser = false;
        want->done = true;
      } else {
        queued[{p, c.hdr[0]}].push_back(std::move(c.buf));
        c.buf = std::vector<char>();
      }
      continue;
    }
    char* dst;
    size_t left;
    if (!c.inPayload) {
      dst = reinterpret_cast<char*>(c.hdr) + c.hdrGot;
      left = kFrameHeader - c.hdrGot;
    } else if (c.toUser) {
      dst = c.dst + c.got;
      left = c.hdr[1] - c.got;
    } else {
      // A queued frame's buffer grows with the bytes that arrive: a length field alone (any
      // value) allocates at most kQueueSlice.
      left = static_cast<size_t>(std::min<uint64_t>(c.hdr[1] - c.got, kQueueSlice));
      if (c.buf.size() < c.got + left) c.buf.resize(c.got + left);
      dst = c.buf.data() + c.got;
    }
    ssize_t n = ::recv(c.sock.fd(), dst, left, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      COCCL_INFO(kLogBootstrap, "bootstrap rank %d: %s closed its connection (%s)", rank,
                 who(p).c_str(), n == 0 ? "EOF" : errnoString(errno).c_str());
      markClosed(p);
      return;
    }
    if (c.inPayload) {
      c.got += static_cast<size_t>(n);
      continue;
    }
    c.hdrGot += static_cast<size_t>(n);
    if (c.hdrGot < kFrameHeader) continue;
    c.hdrGot = 0;
    c.inPayload = true;
    c.got = 0;
    // Straight into the caller's buffer only while no earlier frame of its tag waits in the
    // queue (one read into the queue before this receive began): messages of one (peer, tag)
    // are delivered in send order, and a frame still arriving never completes a receive that
    // the queue satisfies first (which would leave this frame writing into a returned buffer).
    auto q = queued.find({p, c.hdr[0]});
    const bool direct = target && !want->done && (q == queued.end() || q->second.empty());
    const FrameWant fw{direct ? want->tag : 0, direct ? want->bytes : 0};
    const FrameRoute route = routeFrame(c.hdr[0], c.hdr[1], direct ? &fw : nullptr);
    c.toUser = route == FrameRoute::ToUser;
    c.dst = c.toUser ? want->data : nullptr;
    c.buf = std::vector<char>();  // else: queued, the buffer grows as the payload arrives
    // The frame stays in the stream (queued when it is complete) for a recv of its own size.
    if (route == FrameRoute::SizeMismatch)
      COCCL_THROW(cocclInternalError,
                  "message from %s with tag %llu has %llu bytes, expected %zu", who(p).c_str(),
                  static_cast<unsigned long long>(want->tag),
                  static_cast<unsigned long long>(c.hdr[1]), want->bytes);
  }
}

// The caller's buffer is about to go away: keep a partly read frame in our own buffer.
void Bootstrap::Impl::detachUser(RecvOp* r) {
  if (!r || r->connectOnly) return;
  InConn& c = in[r->peer];
  if (c.inPayload && c.toUser) {
    c.buf.assign(c.dst, c.dst + c.got);
    c.buf.resize(c.hdr[1]);
    c.dst = c.buf.data();
    c.toUser = false;
  }
}

void Bootstrap::Impl::progressSend(SendOp& s) {
  const size_t total = kFrameHeader + s.hdr[1];
  while (s.sent < total) {
    iovec iov[2];
    int cnt = 0;
    if (s.sent < kFrameHeader) {
      iov[cnt++] = {reinterpret_cast<char*>(s.hdr) + s.sent, kFrameHeader - s.sent};
      if (s.hdr[1]) iov[cnt++] = {const_cast<char*>(s.data), s.hdr[1]};
    } else {
      iov[cnt++] = {const_cast<char*>(s.data) + (s.sent - kFrameHeader), total - s.sent};
    }
    msghdr m;
    std::memset(&m, 0, sizeof(m));
    m.msg_iov = iov;
    m.msg_iovlen = cnt;
    ssize_t n = ::sendmsg(out[s.peer].fd(), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      s.sent += static_cast<size_t>(n);
      continue;
    }
    int e = n < 0 ? errno : EAGAIN;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) return;
    checkAbort();
    if (e == EPIPE || e == ECONNRESET) throwClosed(s.peer);
    COCCL_THROW(cocclSystemError, "send to %s failed: %s", who(s.peer).c_str(),
                errnoString(e).c_str());
  }
  s.done = true;
}

bool Bootstrap::Impl::evictStalePending() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& pd : pending)
    if (pd.sock.valid() && now - pd.since >= std::chrono::milliseconds(kStaleMs)) {
      dropPending(pd);
      std::lock_guard<std::mutex> g(mu);
      pending.erase(std::remove_if(pending.begin(), pending.end(),
                                   [](const Pending& p) { return !p.sock.valid(); }),
                    pending.end());
      return true;
    }
  return false;
}

void Bootstrap::Impl::acceptAll() {
  for (;;) {
    if (pending.size() >= kMaxPending && !evictStalePending()) {
      acceptPaused = true;
      return;
    }
    int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      // Network errors of the new connection itself are reported here (accept(2)): skip it.
      if (e == EINTR || e == ECONNABORTED || e == EPROTO || e == ENETDOWN || e == ENOPROTOOPT ||
          e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == ENETUNREACH)
        continue;
      if (e == EAGAIN || e == EWOULDBLOCK) return;
      checkAbort();
      if ((e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)) {
        if (evictStalePending()) continue;
        // Nothing to close: try again after a pause (the timeout still bounds the wait).
        COCCL_WARN("bootstrap rank %d: accept() failed: %s", rank, errnoString(e).c_str());
        acceptPaused = true;
        return;
      }
      COCCL_THROW(cocclSystemError, "accept() failed: %s", errnoString(e).c_str());
    }
    Pending pd;
    pd.sock = Socket(fd);
    pd.since = std::chrono::steady_clock::now();
    std::memset(&pd.hello, 0, sizeof(pd.hello));
    std::lock_guard<std::mutex> g(mu);
    pending.push_back(std::move(pd));
    if (aborted.load(std::memory_order_acquire)) pending.back().sock.shutdown();
  }
}

void Bootstrap::Impl::dropPending(Pending& pd) {
  std::lock_guard<std::mutex> g(mu);
  pd.sock.close();
}

void Bootstrap::Impl::readHello(Pending& pd) {
  char* dst = reinterpret_cast<char*>(&pd.hello) + pd.got;
  ssize_t n = ::recv(pd.sock.fd(), dst, sizeof(pd.hello) - pd.got, MSG_DONTWAIT);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) {
    COCCL_INFO(kLogBootstrap, "bootstrap rank %d: a connection closed before its hello", rank);
    return dropPending(pd);
  }
  pd.got += static_cast<size_t>(n);
  const WireProgress w = checkWirePrefix(&pd.hello, pd.got, sizeof(pd.hello), magic);
  if (w == WireProgress::BadMagic) {
    COCCL_WARN("bootstrap rank %d: dropped a connection with the wrong magic", rank);
    return dropPending(pd);
  }
  if (w == WireProgress::NeedMore) return;
  int r = pd.hello.rank;
  if (!checkPeerHello(pd.hello, rank, nranks, [this](int q) { return in[q].sock.valid(); })) {
    COCCL_WARN("bootstrap rank %d: dropped a hello from rank %d of %d (unexpected)", rank, r,
               pd.hello.nranks);
    return dropPending(pd);
  }
  adopt(in[r].sock, std::move(pd.sock));
  COCCL_TRACE(kLogBootstrap, "bootstrap rank %d: connection from %s", rank, who(r).c_str());
}

// Drives `s` and `r` (either may be null) to completion before `dl`.
void Bootstrap::Impl::run(SendOp* s, RecvOp* r, const Deadline& dl) {
  try {
    if (s) ensureOut(s->peer, dl);
    for (;;) {
      checkAbort();
      if (r && !r->done) {
        if (r->connectOnly) {
          r->done = in[r->peer].sock.valid();
        } else if (!tryQueue(*r)) {
          pump(r->peer, r);
          if (!r->done) tryQueue(*r);
          if (!r->done && in[r->peer].closed) throwClosed(r->peer);
        }
      }
      if (s && !s->done) progressSend(*s);
      if ((!s || s->done) && (!r || r->done)) return;

      fds.clear();
      fdPeer.clear();
      fds.push_back({acceptPaused ? -1 : listener.fd(), POLLIN, 0});
      for (auto& pd : pending) fds.push_back({pd.sock.fd(), POLLIN, 0});
      for (int p = 0; p < nranks; ++p) {
        if (!in[p].sock.valid() || in[p].closed) continue;
        fds.push_back({in[p].sock.fd(), POLLIN, 0});
        fdPeer.push_back(p);
      }
      if (s && !s->done) fds.push_back({out[s->peer].fd(), POLLOUT, 0});
      int rc = ::poll(fds.data(), fds.size(),
                      dl.remainingMs(acceptPaused ? kAcceptPauseMs : kPollSliceMs));
      acceptPaused = false;
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0) COCCL_THROW(cocclSystemError, "poll() failed: %s", errnoString(errno).c_str());
      checkAbort();
      if (rc == 0) {
        if (dl.expired())
          COCCL_THROW(cocclSystemError, "timed out after %lld ms",
                      static_cast<long long>(timeoutMs));
        continue;
      }
      if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL))
        COCCL_THROW(cocclSystemError, "the listening socket failed");
      const size_t np = pending.size();
      for (size_t i = 0; i < np; ++i)
        if (fds[1 + i].revents) readHello(pending[i]);
      if (np) {
        std::lock_guard<std::mutex> g(mu);
        pending.erase(std::remove_if(pending.begin(), pending.end(),
                                     [](const Pending& pd) { return !pd.sock.valid(); }),
                      pending.end());
      }
      for (size_t j = 0; j < fdPeer.size(); ++j)
        if (fds[1 + np + j].revents) pump(fdPeer[j], r);
      if (fds[0].revents & POLLIN) acceptAll();
    }
  } catch (...) {
    detachUser(r);
    // A frame cut in the middle would corrupt the stream: end it so the peer sees EOF.
    if (s && s->sent > 0 && !s->done) {
      std::lock_guard<std::mutex> g(mu);
      out[s->peer].shutdown();
    }
    throw;
  }
}

void Bootstrap::Impl::sendTo(int peer, uint64_t tag, const void* data, size_t bytes,
                             const Deadline& dl) {
  const char* p = static_cast<const char*>(data);
  if (peer == rank) {
    queued[{rank, tag}].emplace_back(p, p + bytes);
    return;
  }
  SendOp s{peer, {tag, bytes}, p};
  run(&s, nullptr, dl);
}

void Bootstrap::Impl::recvFrom(int peer, uint64_t tag, void* data, size_t bytes,
                               const Deadline& dl) {
  RecvOp r{peer, tag, static_cast<char*>(data), bytes};
  if (peer == rank) {
    if (!tryQueue(r))
      COCCL_THROW(cocclInvalidUsage, "recv from self with tag %llu before the matching send",
                  static_cast<unsigned long long>(tag));
    return;
  }
  run(nullptr, &r, dl);
}

// One pass over what is readable now: new connections and their hellos, then peer's frames
// (into the queue), then the queue.
bool Bootstrap::Impl::tryRecvFrom(int peer, uint64_t tag, void* data, size_t bytes) {
  RecvOp r{peer, tag, static_cast<char*>(data), bytes};
  if (tryQueue(r)) return true;
  if (peer == rank) return false;
  acceptAll();
  acceptPaused = false;
  const size_t np = pending.size();
  for (size_t i = 0; i < np; ++i) readHello(pending[i]);
  if (np) {
    std::lock_guard<std::mutex> g(mu);
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [](const Pending& pd) { return !pd.sock.valid(); }),
                  pending.end());
  }
  if (in[peer].sock.valid() && !in[peer].closed) pump(peer, nullptr);
  return tryQueue(r);
}

}  // namespace coccl
