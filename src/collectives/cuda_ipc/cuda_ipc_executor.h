// The CUDA IPC executor: collectives and Send/Recv on device buffers between the ranks of one
// host (several ranks may share a GPU), one kernel per call on the caller's stream, exchanging
// through peer-mapped staging regions (src/transport/cuda_ipc) with device flags. The protocol
// is written down at the top of cuda_ipc_executor.cc; the kernels are kernels.cuh, the
// per-call partition plan.h. No CUDA type appears here.
//
// Requirements: every rank made its CUDA device current (cudaSetDevice) before
// cocclCommInitRank; ranks on one host, at most dev::kMaxRanks of them; the same
// COCCL_DEVICE_BLOCKS and COCCL_DEVICE_STAGING_BYTES everywhere (agreed at init).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/executor.h"
#include "comm/context.h"

namespace coccl {

class CudaIpcExecutor final : public Executor {
 public:
  // Collective over the bootstrap: maps every peer's region. Returns nullptr on every rank, with
  // the same *why, when any rank cannot take part. `device` is this rank's CUDA device (-1:
  // none); `nblocks` the channels (thread blocks) of a call at most.
  static std::unique_ptr<CudaIpcExecutor> probe(CommContext& ctx, int device, int nblocks,
                                                std::string* why);
  ~CudaIpcExecutor() override;

  const char* name() const override { return "cuda_ipc"; }
  // Device buffers; exact, a built-in codec (fused kernels), or a plug-in codec with device
  // launchers (the staged pipeline, collectives/staged, with this executor's P2P kernel).
  bool supports(const CollRequest& r) const override;
  void run(const CollRequest& r, CollStats& stats) override;
  // One kernel for the whole group, on the first operation's stream; the other operations'
  // streams are joined with events (at most kEvents streams, dev::kMaxP2P operations).
  void runP2P(const std::vector<CollRequest>& group, CollStats& stats) override;

  // cocclSuccess, or the error a kernel recorded (timeout: cocclSystemError; a peer failed or
  // aborted: cocclRemoteError; this rank aborted, or a peer's call differed (the kernels'
  // agreement, kernel_common.cuh agreeCall): cocclInvalidUsage).
  cocclResult_t asyncError() const override;
  // A call whose descriptor differed from a peer's (kDevMismatch: cocclInvalidUsage): the
  // fields and both values.
  std::string asyncErrorMessage() const override;
  // Running and later kernels stop; peers waiting on this rank are released (poisoned flags).
  void abort() override;
  // Waits for this rank's kernels and until every peer consumed what this rank staged for it,
  // so the staging may be freed. Throws on a dead peer or timeout.
  void quiesce() override;
  int cudaDevice() const override;
  // COCCL_PHASE_TIMES=1: the fused collective kernels' phase counters (dev_types.h PhaseWord).
  bool phaseTimes(std::vector<uint64_t>* words) const override;

  struct Impl;  // (public for executor_impl.h's IpcMover only)

 private:
  explicit CudaIpcExecutor(CommContext& ctx);
  std::unique_ptr<Impl> impl_;
};

}  // namespace coccl
