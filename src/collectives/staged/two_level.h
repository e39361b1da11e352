// The schedule of the two-level (hierarchical) ReduceScatter and AllReduce of the staged
// pipeline (staged_hier.cc runs it on device buffers), written against a small set of
// operations so that it runs unchanged on the CPU in tests (tests/collectives/staged). SDP4Bit's
// scheme (Jia et al., "SDP4Bit", NeurIPS 2024, section 3.2) as the host path runs it
// (collectives/host/hierarchical.cc has the steps): the same shards, chunks, codec bytes and
// fp32 summation order, so the results equal the host path's bit for bit. CUDA-free.
#pragma once

#include <cstddef>
#include <vector>

#include "coccl.h"
#include "codecs/codec.h"

namespace coccl {

// What the schedule needs of the memory it runs on. Every operation is ordered after the ones
// issued before it (a stream, or immediate execution); pointers are into the call's buffers or
// into staging(). Element counts, never bytes, except where named.
class TwoLevelOps {
 public:
  struct Xfer {
    void* buf;     // send: source, recv: destination
    size_t bytes;  // > 0
    int peer;
    bool send;
  };
  virtual ~TwoLevelOps() = default;
  // At least `bytes` bytes of staging (twoLevelStagingBytes), 256-byte aligned, for the whole
  // call.
  virtual char* staging(size_t bytes) = 0;
  // out = encode(in[0, n) of type dt) with codec c.
  virtual void encode(const Codec& c, const void* in, cocclDataType_t dt, size_t n, void* out) = 0;
  // acc[i] = (((acc[i] + decode(ins[0])[i]) + ...) + decode(ins[k-1])[i]) in fp32 (payloads of
  // elements of type dt), 1 <= k.
  virtual void decodeAccumulate(const Codec& c, const void* const* ins, int k, size_t n,
                                cocclDataType_t dt, float* acc) = 0;
  // acc[i] += in[i] (raw elements of type dt) in fp32.
  virtual void accumulate(const void* in, cocclDataType_t dt, size_t n, float* acc) = 0;
  virtual void fill(float* acc, size_t n, float value) = 0;
  // out[i] = acc[i] * scale (when scale != 1), rounded to dt; out may be acc (dt fp32).
  virtual void finish(const float* acc, size_t n, float scale, cocclDataType_t dt, void* out) = 0;
  // out[0, n) of type dt = decode(in).
  virtual void decode(const Codec& c, const void* in, size_t n, cocclDataType_t dt, void* out) = 0;
  // One grouped exchange: every rank posts the matching group; several transfers between one
  // pair of ranks are matched in the order they are posted (NCCL's grouped send/recv).
  virtual void exchange(const std::vector<Xfer>& group) = 0;
};

struct TwoLevelCall {
  bool allReduce = true;  // else ReduceScatter (count = elements per rank)
  const void* in = nullptr;
  void* out = nullptr;
  size_t count = 0;
  cocclDataType_t dt = cocclFloat32;
  cocclRedOp_t op = cocclSum;
  const Codec* intra = nullptr;  // inside a node (input type dt)
  const Codec* inter = nullptr;  // between nodes (fp32 partial sums)
};

struct TwoLevelShape {
  int nranks = 0, rank = 0;
  int ranksPerNode = 0;   // L: rank r is local rank r % L of node r / L; 1 < L < nranks
  size_t chunkBytes = 0;  // COCCL_CHUNK_BYTES: the host's chunks
  // Pieces overlap (one grouped exchange carries exchange j of piece t - j for every j) or run
  // one after another (each exchange its own group).
  bool pipelined = true;
};

// Elements of one piece (the host's chunk): chunkElems(chunkBytes, element size, the larger
// block).
size_t twoLevelChunkElems(const TwoLevelCall& c, const TwoLevelShape& s);

// Bytes of staging runTwoLevel asks ops.staging() for (0 for an empty call), so that a caller
// can provide it before it starts anything. Throws as runTwoLevel.
size_t twoLevelStagingBytes(const TwoLevelCall& c, const TwoLevelShape& s);

// Runs the call; returns the payload bytes this rank sent (the host path's wireBytesSent less
// its call agreement's descriptors, 128 bytes to each peer). Throws Error
// (cocclInvalidArgument) for a shape that is not two-level.
size_t runTwoLevel(const TwoLevelCall& c, const TwoLevelShape& s, TwoLevelOps& ops);

}  // namespace coccl
