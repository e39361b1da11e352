// cocclAllGatherDelta's difference mode on device buffers (include/coccl.h), composed from
// what the device executors already have: the codec's device operations (deviceEncode,
// deviceDecode) and an exact device AllGather of the encoded bytes, run by whichever executor
// the communicator's router picks for it (CUDA IPC's kernels, or the real NCCL). Two small
// kernels (delta_kernels.cu) do the subtraction and the typed addition with the element rule
// of kernels/delta_math.h, so the bits equal the host path's.
//
// Per piece k of chunkElems(COCCL_CHUNK_BYTES, sizeof(T), block) elements (the host path's
// chunks), on the caller's stream:
//   diff:   f = fp32(in) - fp32(out_me)                         (delta_kernels.cu)
//   encode: payload_me = encode(f) at gath + me * stride       (codec->deviceEncode)
//   gather: exact in-place AllGather of `stride` bytes a rank   (the router's executor)
//   apply:  for j = 0..p-1: f = decode(payload_j); out_j = T(out_j + f)
// stride = encodedBytes(piece) rounded up to 4 bytes (equal for every built-in and int4).
// The scratch (f, gath, the codec's workspace) belongs to the communicator and grows, never
// during a CUDA graph capture; a call waits for the previous one (event), whatever its stream.
#pragma once

#include <functional>
#include <memory>

#include "collectives/request.h"
#include "collectives/stats.h"

namespace coccl {

class DeltaDevice {
 public:
  // Runs an exact AllGather request on device buffers (the communicator's router and executor).
  using Gather = std::function<void(CollRequest&, CollStats&)>;
  explicit DeltaDevice(int device);
  ~DeltaDevice();
  DeltaDevice(const DeltaDevice&) = delete;
  DeltaDevice& operator=(const DeltaDevice&) = delete;

  // `r`: AllGather with its codec (which has device operations), device buffers, recvbuff
  // holding the previous values. Adds the payload bytes this rank sent to stats.wireBytesSent
  // and sets stats.algorithm to "delta/<the gather's algorithm>".
  void run(const CollRequest& r, int nranks, int rank, size_t chunkBytes, const Gather& gather,
           CollStats& stats);
  // True when this build has the device part (CUDA builds).
  static bool built();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The kernels (delta_kernels.cu): d[i] = fp32(next[i]) - fp32(prev[i]); out[i] = T(out[i] +
// dec[i]). Enqueued on `stream`; throw Error on a failed launch.
void launchDeltaDiff(const void* next, const void* prev, cocclDataType_t dt, size_t n, float* d,
                     cocclStream_t stream);
void launchDeltaApply(void* out, const float* dec, cocclDataType_t dt, size_t n,
                      cocclStream_t stream);

}  // namespace coccl
