// Entry points of the collectives layer, called by the C boundary after argument checks.
// Host buffers: run to completion. Device buffers (CUDA builds): enqueued on `stream`, return at
// once (device/device_comm.h). Each throws coccl::Error on failure; host and device buffers
// mixed in one call are cocclInvalidArgument.
#pragma once

#include <cstddef>
#include <vector>

#include "codecs/codec.h"
#include "coccl.h"

namespace coccl {

class Communicator;

// `forced`: a per-call codec (nullptr = the communicator's policy).
void allReduce(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
               cocclRedOp_t op, const Codec* forced, cocclStream_t stream = nullptr);
void reduceScatter(Communicator& c, const void* in, void* out, size_t recvcount,
                   cocclDataType_t dt, cocclRedOp_t op, const Codec* forced,
                   cocclStream_t stream = nullptr);
void allGather(Communicator& c, const void* in, void* out, size_t sendcount, cocclDataType_t dt,
               const Codec* forced, cocclStream_t stream = nullptr);
void broadcast(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
               int root, cocclStream_t stream = nullptr);
void reduce(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
            cocclRedOp_t op, int root, cocclStream_t stream = nullptr);

struct P2POp {
  bool send;
  void* buf;
  size_t bytes;
  int peer;
  cocclStream_t stream = nullptr;  // device buffers
};
// Posts every send and receive, then waits for all of them (no ordering deadlocks).
void pointToPoint(Communicator& c, const std::vector<P2POp>& ops);

}  // namespace coccl
