// Entry points of the collectives layer, called by the C boundary after argument checks.
// Host buffers: run to completion. Each throws coccl::Error on failure.
#pragma once

#include <cstddef>
#include <vector>

#include "codecs/codec.h"
#include "coccl.h"

namespace coccl {

class Communicator;

// `forced`: a per-call codec (nullptr = the communicator's policy).
void allReduce(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
               cocclRedOp_t op, const Codec* forced);
void reduceScatter(Communicator& c, const void* in, void* out, size_t recvcount,
                   cocclDataType_t dt, cocclRedOp_t op, const Codec* forced);
void allGather(Communicator& c, const void* in, void* out, size_t sendcount, cocclDataType_t dt,
               const Codec* forced);
void broadcast(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
               int root);
void reduce(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
            cocclRedOp_t op, int root);

struct P2POp {
  bool send;
  void* buf;
  size_t bytes;
  int peer;
};
// Posts every send and receive, then waits for all of them (no ordering deadlocks).
void pointToPoint(Communicator& c, const std::vector<P2POp>& ops);

}  // namespace coccl
