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
#include "collectives/host/delta_header.h"
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

  // cocclAllGatherDelta (delta.cc). Every rank's header in rank order (mine in my place), over
  // this executor's transport whatever the call's buffers: p-1 sends and receives of
  // kDeltaHeaderBytes. Then, on host buffers, the difference mode of `r` (an AllGather whose
  // codec is set; recvbuff holds the previous values): wire bytes and algorithm into `stats`.
  std::vector<DeltaHeader> exchangeDeltaHeaders(const DeltaHeader& mine);
  void runAllGatherDelta(const CollRequest& r, CollStats& stats);

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
  // The tag of the call descriptors (agree_call.cc): [Collective][seq 2^22-1, which
  // nextCollectiveTag never hands out][0]. It carries no call number: the descriptors of a
  // pair of ranks match in the order they were sent.
  static uint64_t callDescTag();
  // The tag of data sent right behind the descriptors (agree_call.h): seq 2^22-2, also never
  // handed out, also a FIFO per pair.
  static uint64_t agreeEagerTag();
  // Send/Recv: the number n of the next message this rank sends to / receives from `peer`
  // (sends and receives of one pair of ranks match in order, whatever the grouping), and the
  // tags of its three parts [kind:2][n:46]: the sender's header and the payload (S -> R), the
  // receiver's header (R -> S). p2p.cc.
  uint64_t nextSendSeq(int peer);
  uint64_t nextRecvSeq(int peer);
  enum class P2PPart : uint64_t { Header = 1, Payload = 2, ReceiverHeader = 3 };
  static uint64_t p2pTag(P2PPart part, uint64_t seq);

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
