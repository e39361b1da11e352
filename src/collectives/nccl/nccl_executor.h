// The NCCL executor: collectives and Send/Recv on device buffers through the real NCCL
// (src/transport/nccl, loaded at run time) between ranks on any GPUs of any nodes, where CUDA
// IPC cannot reach (other hosts) or is not wanted (COCCL_DEVICE_TRANSPORT=nccl); or, made
// exact-only, beside the CUDA IPC executor for the uncompressed operations (COCCL_DEVICE_EXACT).
//
// Compressed AllReduce (two-shot), ReduceScatter and AllGather run the staged codec pipeline
// (collectives/staged/staged_codec.h: the codec's device operations, built-in or plug-in, with
// grouped ncclSend/ncclRecv moving the encoded pieces of COCCL_CHUNK_BYTES), bit for bit the
// results of the host path and of the CUDA IPC path. Uncompressed collectives and Send/Recv
// are NCCL's own. The compressed collectives are checked for agreement across ranks in their
// first exchange (the descriptors in its NCCL group), and under COCCL_NCCL_CALL_CHECK=2 every
// call, the exact ones too, before it (collectives/staged/call_check.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coccl.h"
#include "collectives/executor.h"
#include "comm/context.h"

namespace coccl {

class NcclExecutor final : public Executor {
 public:
  // Collective over the bootstrap (every rank, its device current): the executor on every rank,
  // or nullptr on every rank with *why. exactOnly: only uncompressed operations will come (no
  // staging is allocated).
  static std::unique_ptr<NcclExecutor> probe(CommContext& ctx, int device, bool exactOnly,
                                             std::string* why);
  ~NcclExecutor() override;
  // Exact-only: whether it also takes the uncompressed calls no policy rule assigned
  // (ExactPath::Default: true when COCCL_DEVICE_EXACT brought it up, false when only a policy
  // rule's "exact": "nccl" did). Set once, after probe.
  void setTakesDefaultExact(bool on);

  const char* name() const override { return "nccl"; }
  // Device buffers. Exact-only: no codec, and not a call a policy rule gives to coccl's kernels
  // (CollRequest::exact); Send/Recv of every type, collectives not of an fp8 type (NCCL has
  // those from 2.24 on sm_90 only; coccl's kernels everywhere). Otherwise exact, or a codec
  // with a device implementation (AllReduce / ReduceScatter: at most kernels::kMaxReduceInputs
  // ranks).
  bool supports(const CollRequest& r) const override;
  void run(const CollRequest& r, CollStats& stats) override;
  void runP2P(const std::vector<CollRequest>& group, CollStats& stats) override;

  // NCCL's asynchronous error, or cocclInvalidUsage once the per-call check
  // (staged/call_check.h) saw ranks disagree (asyncErrorMessage names the fields).
  cocclResult_t asyncError() const override;
  std::string asyncErrorMessage() const override;
  void abort() override;
  // Waits (bounded by COCCL_TIMEOUT_MS) for the internal stream, then the device.
  void quiesce() override;
  int cudaDevice() const override;

 private:
  NcclExecutor(CommContext& c, int device);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coccl
