// Per-call agreement of the device collectives over NCCL, whose kernels do not compare
// descriptors (collectives/call_desc.h): the calls the NCCL executor runs (COCCL_NCCL_CALL_CHECK:
// 1, the default, its compressed calls; 2 every call; 0 none). (The staged pipeline over CUDA IPC
// compares its descriptors inside its first exchange's P2P kernel instead: StagedCodec::run's
// `agree`.) Before the call:
//   1. a one-block kernel stores this rank's 128-byte descriptor (a kernel argument, so the
//      host never rewrites memory an earlier call still reads; CUDA-graph capturable) into
//      device scratch;
//   2. the transport's ByteMover gathers every rank's descriptor (nranks x 128 bytes): NCCL's
//      ncclAllGather, or one grouped exchange of 128 bytes to and from every peer;
//   3. a one-block kernel compares all of them; on a difference it copies the nranks
//      descriptors into mapped host memory and raises the error word (the first difference
//      wins, later calls keep it).
// Every rank holds the same descriptors, so every rank sees the difference and prints the same
// message (callDescMismatch). The check runs before the call, so ranks whose calls disagree
// badly enough to leave the transport waiting (different counts or roots can) are told by
// cocclCommGetAsyncError even while the call hangs; the call itself is not held back (its
// kernels start once enqueued): NCCL's kernels may write recvbuff.
// Cost: about +20 us a call over NCCL's socket transport on one H200 (8 B: 25-29 -> 47-53 us);
// on compressed calls about +37 us (one H100, 2 processes, bf16 fp8_ash_ds AllReduce: 1.35x the
// time at 64 KiB, 1.1x at 1-4 MiB, within the spread at 16 MiB; perf/RESULTS.md, 2026-12-07).
// Carrying the descriptor in the pipeline's first exchange (as over CUDA IPC) would remove it.
// It runs on the caller's stream: calls of one stream share a scratch slot (they are ordered);
// each stream has its own (cudaStreamGetId; kept for every stream the communicator ever saw).
// A call captured into a CUDA graph gets a slot of its own that the graph keeps (a user object)
// and gives back when it is destroyed. Slots of (nranks + 1) x 128 bytes come in slabs of 16.
// A graph must not outlive its communicator, and the executions of one captured graph (several
// execs of it, clones, child-graph copies) share its slots: one of them may run at a time, or
// they can be reported as disagreeing.
// The exact calls (NCCL's own collectives, which NCCL does not check either) only under
// COCCL_NCCL_CALL_CHECK=2, for the cost on small calls; the compressed ones by default. Under 1,
// ranks that disagree on whether a call is compressed at all (a codec on some ranks only, counts
// on either side of the policy's threshold, an op the codec does not take on one rank) enqueue
// different NCCL operations (the check's all-gather against NCCL's collective): NCCL hangs or
// gives wrong results, as NCCL itself does; only 2 reports them. Running the all-gather in one
// NCCL group with an exact call (then comparing after it) was measured no faster there, and it
// would leave the hanging disagreements unreported.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "coccl.h"

namespace coccl {

struct CallDesc;
class ByteMover;

class DeviceCallCheck {
 public:
  // The mapped host state and the device word of the first difference, on the current
  // device (scratch slots come on first use of a stream). Throws Error.
  DeviceCallCheck(int nranks, int rank);
  ~DeviceCallCheck();
  DeviceCallCheck(const DeviceCallCheck&) = delete;
  DeviceCallCheck& operator=(const DeviceCallCheck&) = delete;

  // Steps 1-3 above for the call described by `d`, on `stream`, the descriptors moved by
  // `mover` (enqueue the call after). From any thread, one thread per stream at a time (as
  // NCCL asks). Throws Error (a CUDA failure, a stream whose capture was invalidated).
  void check(const CallDesc& d, ByteMover& mover, cudaStream_t stream);
  // cocclInvalidUsage once a difference was seen, else cocclSuccess. Cheap, any thread.
  cocclResult_t error() const;
  // The difference, as callDescMismatch words it; "" while there is none.
  std::string message() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coccl
