// The host executor: collectives and Send/Recv on host buffers, over the host point-to-point
// transport (UCX, src/transport/transport.h). Each call runs to completion on the calling
// thread. Owns the transport, the waiter (every wait bounded by COCCL_TIMEOUT_MS, a dead peer
// or an abort ends it), the staging-buffer pool and the tag sequences. The algorithms
// (algorithms.h) run against it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/executor.h"
#include "collectives/host/buffer_pool.h"
#include "comm/context.h"
#include "transport/transport.h"

namespace coccl {

class HostExecutor final : public Executor {
 public:
  // Collective over the bootstrap: connects the transport's endpoints to every peer.
  explicit HostExecutor(CommContext& ctx);
  ~HostExecutor() override;

  const char* name() const override { return "host"; }
  bool supports(const CollRequest& r) const override { return r.mem == MemKind::Host; }
  void run(const CollRequest& r, CollStats& stats) override;
  void runP2P(const std::vector<CollRequest>& group, CollStats& stats) override;

  // For the algorithms (algorithms.h).
  int rank() const { return ctx_.rank(); }
  int nranks() const { return ctx_.nranks(); }
  const CommConfig& config() const { return ctx_.config(); }
  Transport& transport() { return *transport_; }
  Waiter& waiter() { return *waiter_; }
  BufferPool& pool() { return pool_; }
  // The statistics of the call in progress (algorithms add the bytes they send).
  CollStats& stats() { return *stats_; }

  // Tag layout inside the transport's 48 bits: [kind:2][seq:22][sub:24]. A fresh tag base for
  // the next collective: [Collective][seq][0]; add a 24-bit sub-tag.
  uint64_t nextCollectiveTag();
  // Tag for the n-th message this rank sends to / receives from `peer` (matched in order).
  uint64_t nextSendTag(int peer);
  uint64_t nextRecvTag(int peer);

 private:
  bool useRing() const;

  CommContext& ctx_;
  BufferPool pool_;  // declared before the transport: destroyed after it
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Waiter> waiter_;
  uint64_t collSeq_ = 0;
  std::vector<uint64_t> sendSeq_, recvSeq_;
  CollStats* stats_ = nullptr;
};

}  // namespace coccl
