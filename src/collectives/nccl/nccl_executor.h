// The NCCL executor: collectives and Send/Recv on device buffers through the real NCCL
// (src/transport/nccl, loaded at run time) between ranks on any GPUs of any nodes, where CUDA
// IPC cannot reach (other hosts) or is not wanted (COCCL_DEVICE_TRANSPORT=nccl); or, made
// exact-only, beside the CUDA IPC executor for the uncompressed operations (COCCL_DEVICE_EXACT).
//
// Compressed AllReduce (two-shot), ReduceScatter and AllGather run coccl's algorithm with the
// CUDA codec kernels (src/kernels/device_codec.h) and move the encoded chunks with grouped
// ncclSend/ncclRecv, so the results are bit for bit those of the host path and of the CUDA IPC
// path (same shards, same codec bytes, same reduction order). A message is cut into pieces of
// at most COCCL_CHUNK_BYTES of payload per shard; piece k+1 is encoded on the caller's stream
// while piece k's transfer runs on an internal stream (two staging sets, ordered by events, so
// the call stays stream-ordered and CUDA-graph capturable). Uncompressed collectives and
// Send/Recv are NCCL's own.
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

  const char* name() const override { return "nccl"; }
  // Device buffers. Exact-only: no codec; Send/Recv of every type, collectives not of an fp8
  // type (NCCL has those from 2.24 on sm_90 only; coccl's kernels everywhere). Otherwise exact, or a codec with a device
  // implementation (AllReduce / ReduceScatter: at most kernels::kMaxReduceInputs ranks).
  bool supports(const CollRequest& r) const override;
  void run(const CollRequest& r, CollStats& stats) override;
  void runP2P(const std::vector<CollRequest>& group, CollStats& stats) override;

  cocclResult_t asyncError() const override;
  void abort() override;
  // Waits (bounded by COCCL_TIMEOUT_MS) for the internal stream, then the device.
  void quiesce() override;
  int cudaDevice() const override;

 private:
  NcclExecutor(CommContext& c, int device);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// fp32 accumulator -> output of type dt, after acc *= scale when scale != 1 (the host's
// scaleFloats + convertFromFloat, bit for bit). Enqueued on `stream`. nccl_finish.cu.
void launchFinishReduce(const float* acc, size_t count, float scale, cocclDataType_t dt,
                        void* out, cocclStream_t stream);

}  // namespace coccl
