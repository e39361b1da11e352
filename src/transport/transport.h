// Transport: non-blocking tagged point-to-point messages between the ranks of a communicator.
// Knows nothing of codecs or collectives. Implementations: ucx (host memory; within a node over
// shared memory, across nodes over the network), later cuda_ipc and nccl for device memory.
//
// Tags: the caller owns the low 48 bits; a message from rank s with tag t matches only a
// receive posted for (s, t). Messages with the same (peer, tag) match in posting order.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/bootstrap.h"
#include "core/deadline.h"
#include "core/topology.h"

namespace coccl {

constexpr uint64_t kTransportTagBits = 48;
constexpr uint64_t kTransportTagMask = (uint64_t{1} << kTransportTagBits) - 1;

class Request {
 public:
  virtual ~Request() = default;
  // True once the transfer completed (the buffer may be reused / read). Does not progress the
  // transport. Throws Error if the transfer failed or (for receives) the size did not match.
  virtual bool done() = 0;
};
using RequestPtr = std::unique_ptr<Request>;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;

  // Posts a send / receive of `bytes` bytes. The buffer must stay valid until the request is
  // done. peer may equal the own rank.
  virtual RequestPtr isend(int peer, uint64_t tag, const void* buf, size_t bytes) = 0;
  virtual RequestPtr irecv(int peer, uint64_t tag, void* buf, size_t bytes) = 0;

  // Makes progress on outstanding transfers; returns true if anything happened.
  virtual bool progress() = 0;

  // Cancels what is in flight; later calls fail. Safe to call from another thread only through
  // the abort flag given to the constructor (this method runs on the owning thread).
  virtual void close() = 0;
};

// Waits while progressing `t`: until pred() is true, the deadline passes (cocclSystemError),
// *abortFlag becomes true (cocclInvalidUsage "communicator aborted"), or the bootstrap sees a
// dead peer (cocclRemoteError). Yields the CPU when idle so that many ranks can share few
// cores. `what` names the wait in the timeout message.
class Waiter {
 public:
  Waiter(Transport& t, Bootstrap& bs, const std::atomic<bool>& abortFlag, int64_t timeoutMs)
      : t_(t), bs_(bs), abort_(abortFlag), timeoutMs_(timeoutMs) {}

  template <class Pred>
  void until(Pred pred, const char* what);
  void wait(Request& r, const char* what) {
    until([&] { return r.done(); }, what);
  }
  void waitAll(std::vector<RequestPtr>& reqs, const char* what);
  // One poll step: progress + liveness checks, no waiting. Returns true if progress happened.
  bool poll();

  Transport& transport() { return t_; }

 private:
  void idle(const Deadline& d, const char* what);
  Transport& t_;
  Bootstrap& bs_;
  const std::atomic<bool>& abort_;
  int64_t timeoutMs_;
  unsigned spins_ = 0;
  Clock::time_point lastPeerCheck_{};
};

template <class Pred>
void Waiter::until(Pred pred, const char* what) {
  if (pred()) return;
  Deadline d(timeoutMs_);
  for (;;) {
    bool moved = t_.progress();
    if (pred()) return;
    if (!moved) idle(d, what);
  }
}

// Creates the UCX transport for host memory; worker addresses are exchanged through `bs`;
// `topo` says which peers share this host (transport and error-handling choices, see
// ucx_transport.cc).
std::unique_ptr<Transport> makeUcxTransport(Bootstrap& bs, const CommTopology& topo);

}  // namespace coccl
