// Per-call agreement of the device collectives over NCCL, whose kernels do not compare
// descriptors (collectives/call_desc.h): the calls the NCCL executor runs. Each rank's 128-byte
// descriptor is stored by a one-block kernel (a kernel argument, so the host never rewrites
// memory an earlier call still reads; CUDA-graph capturable) into device scratch, every rank's
// is moved to every rank, and a one-block kernel compares them; on a difference it copies the
// nranks descriptors into mapped host memory and raises the error word (the first difference
// wins, later calls keep it). Every rank holds the same descriptors, so every rank sees the
// difference and prints the same message (callDescMismatch). The call's kernels are not held
// back: NCCL's may write recvbuff. Two ways to move them (COCCL_NCCL_CALL_CHECK):
//   1 (the default): the compressed calls, the descriptors carried by the call's first
//     exchange (carry / compare below): in 128-byte heads in front of its payloads (DescHeads;
//     ByteMover::carriesInHeads), so that no NCCL operation is added, stored on the pipeline's
//     internal stream while the first piece is encoded and compared beside the next stage
//     (the two-level calls: 128 bytes to and from every peer added to the pipeline's first
//     NCCL group, compared after it); the staged pipeline over CUDA IPC compares inside its
//     first exchange's P2P kernel likewise (StagedCodec::run's `agree`). A disagreement that leaves
//     the payload sizes alike (the op, a dtype of the same size, counts that round to the same
//     blocks, the codec's parameters) is reported; one that changes them (counts a block apart or
//     more, a codec with another payload) may hang the group inside NCCL before the comparison
//     runs, as NCCL's own calls hang: 2 reports those. Cost (one H100, bf16 fp8_ash_ds AllReduce
//     over NCCL's socket transport, processes with MPS, medians of 4 rounds, perf/RESULTS.md
//     2026-12-07 "in heads"): 0.98-1.02x the time without the check at 64 KiB-1 MiB on 2 and 3
//     ranks, within the spread above. The descriptors as operations of their own cost +12-19% (2
//     ranks) and +4-25% (3) at 64 KiB-1 MiB, and the heads with the store and compare kernels on
//     the exchange's path +10% (2 ranks) and +3-4% (3) at 64-256 KiB.
//   2: every call, the exact ones too (NCCL's own collectives, which NCCL does not check
//     either), each checked before the call by a round of its own (check below: NCCL's
//     ncclAllGather of the descriptors), so that also the calls that then hang are reported
//     (cocclCommGetAsyncError tells while the call hangs). Cost: about +20 us a call over NCCL's
//     socket transport on one H200 (8 B: 25-29 -> 47-53 us); on compressed calls about +37 us
//     (one H100, 2 processes, bf16 fp8_ash_ds AllReduce: 1.35x the time at 64 KiB, 1.1x at
//     1-4 MiB; perf/RESULTS.md, 2026-12-07).
//   0: none.
// Under 1, ranks that disagree on whether a call is compressed at all (a codec on some ranks
// only, counts on either side of the policy's threshold, an op the codec does not take on one
// rank) enqueue different NCCL operations: NCCL hangs or gives wrong results, as NCCL itself
// does; only 2 reports them. Running the check's all-gather in one NCCL group with an exact call
// (then comparing after it) was measured no faster there, and it would leave the hanging
// disagreements unreported.
// Scratch: calls of one stream share a slot (they are ordered; the carried form runs on the
// pipeline's internal stream); each stream has its own (cudaStreamGetId; kept for every stream
// the communicator ever saw). A call captured into a CUDA graph gets a slot of its own that the
// graph keeps (a user object) and gives back when it is destroyed. Slots of (nranks + 1) x 128
// bytes come in slabs of 16. A graph must not outlive its communicator, and the executions of
// one captured graph (several execs of it, clones, child-graph copies) share its slots: one of
// them may run at a time, or they can be reported as disagreeing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "coccl.h"
#include "collectives/call_desc.h"

namespace coccl {

class ByteMover;

class DeviceCallCheck {
 public:
  // The mapped host state and the device word of the first difference, on the current
  // device (scratch slots come on first use of a stream). Throws Error.
  DeviceCallCheck(int nranks, int rank);
  ~DeviceCallCheck();
  DeviceCallCheck(const DeviceCallCheck&) = delete;
  DeviceCallCheck& operator=(const DeviceCallCheck&) = delete;

  // COCCL_NCCL_CALL_CHECK=2: the check of the call described by `d` as a round of its own on
  // `stream`, the descriptors moved by `mover` (its allGather where it has one; enqueue the call
  // after). From any thread, one thread per stream at a time (as NCCL asks). Throws Error (a
  // CUDA failure, a stream whose capture was invalidated).
  void check(const CallDesc& d, ByteMover& mover, cudaStream_t stream);

  // COCCL_NCCL_CALL_CHECK=1: the descriptors carried by a group of the caller's. carry() stores
  // this rank's descriptor on `stream`, also into every send head of `heads` (null: none), and
  // returns where the group moves them: in the heads' transfers, else 128 bytes from mine() to
  // every peer q and from q into from(q), posted first in the group (so that they are matched
  // before the payload); compare() after the group, on the same stream, reads them from the
  // receive heads or from(q). Throw Error as check().
  struct Carried {
    uint64_t* slot = nullptr;  // this rank's 16 words, then nranks x 16 gathered
    DescHeads heads;           // heads.recv null: the descriptors arrive in the slot
    void* mine() const { return slot; }
    void* from(int q) const { return slot + 16 * (static_cast<size_t>(q) + 1); }
  };
  Carried carry(const CallDesc& d, const DescHeads* heads, cudaStream_t stream);
  void compare(const CallDesc& d, const Carried& c, cudaStream_t stream);
  // cocclInvalidUsage once a difference was seen, else cocclSuccess. Cheap, any thread.
  cocclResult_t error() const;
  // The difference, as callDescMismatch words it; "" while there is none.
  std::string message() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coccl
