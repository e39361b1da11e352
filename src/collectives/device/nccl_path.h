// The device path over the NCCL transport (src/transport/nccl): collectives on device buffers
// between ranks on any GPUs of any nodes, where CUDA IPC cannot reach (other hosts) or is not
// wanted (COCCL_DEVICE_TRANSPORT=nccl).
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

namespace coccl {

class Codec;
class Communicator;
struct CollStats;
struct P2POp;

class NcclDevicePath {
 public:
  // Collective over c's bootstrap (every rank, its device current). Check usable().
  // exactOnly: only uncompressed operations will come (no staging is allocated; a codec is an
  // internal error): the NCCL half beside the CUDA IPC path (COCCL_DEVICE_EXACT).
  NcclDevicePath(Communicator& c, int device, bool exactOnly = false);
  ~NcclDevicePath();
  NcclDevicePath(const NcclDevicePath&) = delete;
  NcclDevicePath& operator=(const NcclDevicePath&) = delete;

  bool usable() const;
  const std::string& reason() const;

  // As DeviceComm's (codec: a codec with a device implementation, or nullptr for exact).
  void allReduce(const void* in, void* out, size_t count, cocclDataType_t dt, cocclRedOp_t op,
                 const Codec* codec, cocclStream_t stream, CollStats& stats);
  void reduceScatter(const void* in, void* out, size_t recvcount, cocclDataType_t dt,
                     cocclRedOp_t op, const Codec* codec, cocclStream_t stream, CollStats& stats);
  void allGather(const void* in, void* out, size_t sendcount, cocclDataType_t dt,
                 const Codec* codec, cocclStream_t stream, CollStats& stats);
  void broadcast(const void* in, void* out, size_t count, cocclDataType_t dt, int root,
                 cocclStream_t stream, CollStats& stats);
  void reduce(const void* in, void* out, size_t count, cocclDataType_t dt, cocclRedOp_t op,
              int root, cocclStream_t stream, CollStats& stats);
  void pointToPoint(const std::vector<P2POp>& ops, CollStats& stats);

  cocclResult_t asyncError() const;
  void abort();
  // Waits (bounded by COCCL_TIMEOUT_MS) for the internal stream, then the device.
  void quiesce();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// fp32 accumulator -> output of type dt, after acc *= scale when scale != 1 (the host's
// scaleFloats + convertFromFloat, bit for bit). Enqueued on `stream`. nccl_finish.cu.
void launchFinishReduce(const float* acc, size_t count, float scale, cocclDataType_t dt,
                        void* out, cocclStream_t stream);

}  // namespace coccl
