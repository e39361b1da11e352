// Bootstrap: out-of-band TCP exchange between the ranks of one communicator.
//
// cocclGetUniqueId starts a root (a listening socket served by a detached thread in the calling
// process) and packs its address and a random 64-bit magic into the 128-byte id. Each rank
// listens on its own socket, registers (rank, its address) with the root; the root answers
// everyone with the whole address table and exits. Ranks then talk point to point over
// directed TCP connections opened lazily (i -> j carries i's messages to j), with framed,
// tagged messages; messages with a tag nobody asked for yet are kept until asked for.
// Every wait honours the deadline; a closed peer connection raises cocclRemoteError.
//
// With COCCL_COMM_ID=host:port, rank 0 starts the root at that address inside init.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coccl.h"
#include "core/socket.h"

namespace coccl {

// Layout of cocclUniqueId::internal (128 bytes).
struct BootstrapHandle {
  uint64_t magic;
  SocketAddress root;  // fits in 120 bytes
};
static_assert(sizeof(BootstrapHandle) <= COCCL_UNIQUE_ID_BYTES, "handle too large");

// Fills `handle` with a fresh magic and starts a root listening on the bootstrap interface.
void bootstrapCreateRoot(BootstrapHandle* handle);
// Starts a root at an explicit address (COCCL_COMM_ID on rank 0) with the given magic.
void bootstrapCreateRootAt(const SocketAddress& addr, uint64_t magic);
// Parses COCCL_COMM_ID-style "host:port" (IPv4, IPv6 in [brackets], or a hostname).
SocketAddress parseHostPort(const std::string& hostPort);

class Bootstrap {
 public:
  // Joins the communicator described by `handle`. Blocks until every rank registered with the
  // root or the timeout passed (cocclSystemError / cocclRemoteError on failure).
  Bootstrap(const BootstrapHandle& handle, int rank, int nranks, int64_t timeoutMs);
  ~Bootstrap();
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Tagged point-to-point bytes. send returns once the bytes are handed to the kernel; recv
  // blocks until a message from `peer` with `tag` arrives. The sizes must match exactly
  // (cocclInternalError otherwise; the message stays queued). Messages of one (peer, tag) match
  // in send order. peer == rank() goes through a local queue (send first, then recv).
  // Tags with the top bit (1 << 63) set are reserved for the bootstrap's own allGather and
  // barrier (cocclInvalidArgument here), so user tags never collide with them.
  void send(int peer, uint64_t tag, const void* data, size_t bytes);
  void recv(int peer, uint64_t tag, void* data, size_t bytes);
  // recv without waiting: reads what the connections hold now (accepting new ones) and
  // completes the receive if a message from `peer` with `tag` is there. True when it did.
  bool tryRecv(int peer, uint64_t tag, void* data, size_t bytes);

  // data holds nranks slots of `bytes` each; slot `rank` is this rank's contribution.
  // On return every slot holds that rank's contribution (ring algorithm).
  void allGather(void* data, size_t bytes);
  void barrier();

  // Throws cocclRemoteError if a connected peer closed its connection (the process died or
  // aborted). Cheap (a poll with zero timeout); called from transport wait loops.
  void checkPeers();
  // Closes every connection so that peers blocked on this rank fail fast. Thread-safe;
  // later calls on this object throw `why`, and a call blocked in another thread returns
  // promptly with it: cocclInvalidUsage for an abort the program asked for, the error's code
  // when a failure closes it (CommContext::fail: a dead peer that cocclCommGetAsyncError saw
  // while a call waited must fail that call with cocclRemoteError, not "aborted"). The first
  // abort's code stays. (It shutdown()s the sockets; the fds themselves are closed by the
  // destructor, so that no fd number is reused under a blocked poll.)
  void abort(cocclResult_t why = cocclInvalidUsage);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

  int64_t timeoutMs() const { return timeoutMs_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_;
  int nranks_;
  int64_t timeoutMs_;
  std::atomic<bool> aborted_{false};
  std::atomic<int> abortCode_{cocclInvalidUsage};  // set before aborted_
};

}  // namespace coccl
