// A communicator: this rank's view of a group of ranks - its context (rank, bootstrap,
// topology, config, error state: comm/context.h), its codec policy and its ordered list of
// executors (executor.h). The C boundary hands every call to run() / runP2P() as a CollRequest;
// route() is the one place that decides who runs it:
//   1. the policy picks the codec (policy.h: type, op, size threshold, per-call codec);
//   2. the buffers decide the memory kind (host and device mixed: cocclInvalidArgument);
//   3. the first executor in the list whose supports() accepts the request runs it; when none
//      accepts it compressed, the request is tried again exact (said once per communicator);
//      when none accepts it at all (device buffers without a device executor): cocclInvalidUsage
//      naming why the device executors are off.
// The list, in order: host (host buffers), then the device executors that came up at init
// (device_executors.h): NCCL for the exact operations beside CUDA IPC (COCCL_DEVICE_EXACT),
// CUDA IPC, or NCCL for everything (COCCL_DEVICE_TRANSPORT).
//
// One thread at a time runs operations on a communicator (as with NCCL); requestAbort() and
// asyncError() may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "collectives/executor.h"
#include "collectives/policy.h"
#include "comm/context.h"

namespace coccl {

class HostExecutor;
class DeltaDevice;
class DeviceP2P;

class Communicator {
 public:
  Communicator(const BootstrapHandle& handle, int rank, int nranks, const CommConfig& cfg);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return ctx_.rank(); }
  int nranks() const { return ctx_.nranks(); }
  const CommConfig& config() const { return ctx_.config(); }
  const CodecPolicy& policy() const { return policy_; }
  // worldRanks()[r]: the world rank of rank r (exchanged at init; collectives/policy_init.h).
  const std::vector<int>& worldRanks() const { return policy_.worldRanks(); }
  CommContext& context() { return ctx_; }
  const CollStats& stats() const { return stats_; }
  // The CUDA device of this rank's device executors, -1 when there are none (cocclCommCuDevice).
  int cudaDevice() const;
  // COCCL_PHASE_TIMES: the first executor's phase counters that keeps them
  // (Executor::phaseTimes); false when none does.
  bool phaseTimes(std::vector<uint64_t>* words) const;

  // The number of the next collective call (call_desc.h): the C API takes one for every
  // collective that reaches a usable communicator, before its argument checks.
  uint64_t nextCallSeq() { return callSeq_.fetch_add(1, std::memory_order_relaxed); }
  // Runs one collective. `r.codec` is the per-call codec (nullptr: the policy's choice).
  void run(CollRequest r);
  // Runs every Send and Recv of a group together.
  void runP2P(std::vector<CollRequest> group);
  // cocclAllGatherDelta (include/coccl.h): `r` an AllGather (codec: the per-call choice or
  // nullptr for the policy's), `flags` the call's (COCCL_DELTA_RESET). The header exchange and
  // check first (host transport, collectives/host/delta_header.h), then the exact AllGather
  // (reset, no codec) through the router, the difference mode on the host executor (host
  // buffers) or composed from the device executors' exact AllGather (collectives/delta/).
  void runAllGatherDelta(CollRequest r, unsigned flags);

  // Error state: fail() records an error of a host operation (first wins) and closes the
  // bootstrap; asyncError() is that error, else one an executor raised.
  void fail(cocclResult_t code, const std::string& what = "") { ctx_.fail(code, what); }
  cocclResult_t asyncError() const;
  // For cocclCommGetAsyncError while no call may be in flight: at most every 10 ms, a
  // non-blocking look at the bootstrap connections (Bootstrap::checkPeers), which throws
  // cocclRemoteError for a peer that died or aborted. Calls look there as they wait; an idle
  // rank only learns of it here (PyTorch's watchdog polls ncclCommGetAsyncError).
  void pollPeers();
  // Throws cocclInvalidUsage if the communicator is aborted or broken.
  void checkUsable() const;
  // From any thread: stop what is in flight (the running call throws promptly).
  void requestAbort();
  // Waits for this rank's device work and its peers' consumption of it, then a barrier.
  void finalize();
  // The calls of one kind so far (Coll::Send: Send/Recv groups; weight-difference AllGathers
  // count as AllGather), what the INFO line at destroy prints.
  const CollTotals& totals(Coll c) const { return totals_[static_cast<int>(c)]; }

 private:
  Executor& route(CollRequest& r);
  Executor& routeGroup(const std::vector<CollRequest>& group);
  void beginStats(size_t logicalBytes, const Codec* codec);

  CommContext ctx_;
  CodecPolicy policy_;
  std::vector<std::unique_ptr<Executor>> executors_;  // routing order; destroyed in reverse
  HostExecutor* host_ = nullptr;                       // executors_[0]
  std::unique_ptr<DeltaDevice> deltaDevice_;  // the device difference mode's scratch (lazily)
  std::unique_ptr<DeviceP2P> deviceP2P_;      // compressed device Send/Recv staging (lazily)
  std::string deviceOff_;  // why there is no device executor ("" when there is one)
  std::atomic<bool> saidFallback_{false};
  std::atomic<uint64_t> callSeq_{0};
  std::atomic<int64_t> lastPeerPollMs_{INT64_MIN / 2};
  // Send/Recv messages with a count so far, per peer (a rule's "warmup_calls"; under opMutex).
  std::vector<uint64_t> p2pSent_, p2pRecvd_;
  CollStats stats_;
  CollTotals totals_[kCollKinds];  // per Coll (Send: Send/Recv groups), summed at destroy
};

}  // namespace coccl
