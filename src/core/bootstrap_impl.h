// Bootstrap::Impl, shared by bootstrap.cc (construction, public calls) and bootstrap_p2p.cc
// (the point-to-point engine). Private to src/core.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "core/error.h"

namespace coccl {

// Appended to "RANK closed its bootstrap connection": a rank that fails aborts its own
// connections, so the rank named may only be passing on another rank's failure.
inline constexpr const char kClosedHint[] =
    " (it died or aborted; a failing rank closes its connections too, so this may pass on "
    "another rank's failure: the earliest such error names the rank that failed first)";

// The error of an operation on an aborted bootstrap, `where` naming it: cocclInvalidUsage
// "WHERE: aborted" for an abort the program asked for, else the code of the failure that closed
// it (Bootstrap::abort's `why`).
[[noreturn]] inline void throwAborted(const std::atomic<int>& abortCode, const std::string& where) {
  const auto why = static_cast<cocclResult_t>(abortCode.load(std::memory_order_relaxed));
  if (why == cocclInvalidUsage) COCCL_THROW(cocclInvalidUsage, "%s: aborted", where.c_str());
  COCCL_THROW(why, "%s: the communicator failed in another thread (%s)", where.c_str(),
              resultString(why));
}

struct Bootstrap::Impl {
  // Connection peer -> this, with the state of the frame being read from it.
  struct InConn {
    Socket sock;
    bool closed = false;       // EOF or error seen; written under mu
    uint64_t hdr[2] = {0, 0};  // tag, bytes
    size_t hdrGot = 0;
    bool inPayload = false;
    size_t got = 0;
    char* dst = nullptr;
    bool toUser = false;  // dst is the caller's buffer (else buf, queued when complete)
    std::vector<char> buf;
  };
  struct Pending {  // accepted, hello not complete yet
    Socket sock;
    PeerHello hello;
    size_t got = 0;
    std::chrono::steady_clock::time_point since;  // accepted at
  };
  struct SendOp {
    int peer;
    uint64_t hdr[2];
    const char* data;
    size_t sent = 0;  // bytes of header + payload handed to the kernel
    bool done = false;
  };
  struct RecvOp {
    int peer;
    uint64_t tag;
    char* data;
    size_t bytes;
    bool connectOnly = false;  // done once the connection peer -> this exists
    bool done = false;
  };

  Impl(int r, int n, uint64_t m, int64_t t, const std::atomic<bool>& a, const std::atomic<int>& c)
      : aborted(a), abortCode(c), rank(r), nranks(n), magic(m), timeoutMs(t), in(n), out(n),
        departed(n, 0) {}

  const std::atomic<bool>& aborted;
  const std::atomic<int>& abortCode;  // Bootstrap::abort's `why`
  int rank, nranks;
  uint64_t magic;
  int64_t timeoutMs;
  Socket listener;
  std::vector<PeerInfo> peers;
  std::vector<InConn> in;
  std::vector<Socket> out;  // this -> peer
  std::vector<Pending> pending;  // oldest first; bounded (acceptAll)
  bool acceptPaused = false;     // skip the listener for one poll (acceptAll could not accept)
  std::map<std::pair<int, uint64_t>, std::deque<std::vector<char>>> queued;
  // Guards the Socket objects (and InConn::closed) against abort()/checkPeers() running on
  // another thread. The owning thread reads them without it; it only writes under it.
  std::mutex mu;
  uint64_t agSeq = 0;
  std::vector<pollfd> fds;  // scratch of run()
  std::vector<int> fdPeer;
  std::vector<pollfd> checkFds;  // scratch of checkPeers(), under mu
  std::vector<int> checkPeer;
  std::vector<char> departed;    // peers that left cleanly (goodbye seen), under mu

  std::string who(int p) const {
    return format("rank %d (%s)", p, p < static_cast<int>(peers.size()) ? peers[p].host : "?");
  }
  void checkAbort() const {
    if (aborted.load(std::memory_order_acquire))
      throwAborted(abortCode, format("the bootstrap of rank %d", rank));
  }
  [[noreturn]] void throwClosed(int p) const {
    COCCL_THROW(cocclRemoteError, "%s closed its bootstrap connection%s", who(p).c_str(),
                kClosedHint);
  }
  // Publishes a socket under the lock; one that races with abort() is shut down at once.
  void adopt(Socket& slot, Socket&& s) {
    std::lock_guard<std::mutex> g(mu);
    slot = std::move(s);
    if (aborted.load(std::memory_order_acquire)) slot.shutdown();
  }
  void markClosed(int p) {
    std::lock_guard<std::mutex> g(mu);
    in[p].closed = true;
  }

  // ---- point-to-point engine (bootstrap_p2p.cc) ----
  void ensureOut(int p, const Deadline& dl);
  bool tryQueue(RecvOp& r);
  void pump(int p, RecvOp* want);
  void detachUser(RecvOp* r);
  void progressSend(SendOp& s);
  void acceptAll();
  void dropPending(Pending& pd);
  bool evictStalePending();
  void readHello(Pending& pd);
  void run(SendOp* s, RecvOp* r, const Deadline& dl);
  void sendTo(int peer, uint64_t tag, const void* data, size_t bytes, const Deadline& dl);
  void recvFrom(int peer, uint64_t tag, void* data, size_t bytes, const Deadline& dl);
  bool tryRecvFrom(int peer, uint64_t tag, void* data, size_t bytes);
};

}  // namespace coccl
