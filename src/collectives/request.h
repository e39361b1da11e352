// One call, as a value: what the C boundary hands down and every executor receives unchanged
// (except that the router may clear `codec` when no executor runs the call compressed).
#pragma once

#include <cstddef>

#include "coccl.h"
#include "mem/memtype.h"

namespace coccl {

class Codec;

enum class Coll { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, Send, Recv };
constexpr int kCollKinds = static_cast<int>(Coll::Recv) + 1;

const char* collName(Coll c);  // "AllReduce", ..., "Send", "Recv"

// Which implementation runs a collective uncompressed on device buffers, as a policy rule asks
// ("exact" in docs/policy.md): the communicator's default (COCCL_DEVICE_EXACT), the real NCCL,
// or coccl's own kernels (CUDA IPC). Where the one asked for is not there, the other runs it.
// The values are cocclExactPath_t's (cocclCommQueryExactPath returns them as they are).
enum class ExactPath : unsigned char {
  Default = cocclExactDefault,
  Nccl = cocclExactNccl,
  Coccl = cocclExactCoccl
};
const char* exactPathName(ExactPath e);  // "default", "nccl", "coccl"

struct CollRequest {
  Coll coll = Coll::AllReduce;
  const void* in = nullptr;  // send buffer (Send: the data; Recv: unused)
  void* out = nullptr;       // receive buffer (Recv: the data; Send: unused)
  // Elements as the public API counts them: AllReduce/Broadcast/Reduce/Send/Recv the whole
  // message, ReduceScatter the per-rank output (recvcount), AllGather the per-rank input.
  size_t count = 0;
  cocclDataType_t dt = cocclFloat32;
  cocclRedOp_t op = cocclSum;
  int root = 0;  // Broadcast / Reduce: the root rank; Send / Recv: the peer
  const Codec* codec = nullptr;  // chosen by the policy; nullptr = exact
  // A two-level policy entry ("hier:"): the inter-node codec (`codec` is the intra-node one).
  // Only the host executor runs it; the router clears it with `codec`.
  const Codec* interCodec = nullptr;
  // Uncompressed device collectives: whose implementation the policy asks for.
  ExactPath exact = ExactPath::Default;
  cocclStream_t stream = nullptr;
  MemKind mem = MemKind::Host;  // of the buffers this rank touches (set by the router)
  // Collectives: this call's number on the communicator (Communicator::nextCallSeq, taken by
  // the C API before the argument checks); compared across ranks (call_desc.h).
  uint64_t seq = 0;
  // Send / Recv on host buffers: `codec` (passed for this call) refuses `count`. The message
  // still goes through the header check with that codec, so both ends fail alike: a mismatch
  // if the other end passed something else, else the refusal at both (host/p2p.cc).
  bool refused = false;

  bool isP2P() const { return coll == Coll::Send || coll == Coll::Recv; }
  int peer() const { return root; }
  // The buffer a Send reads or a Recv writes.
  void* p2pBuffer() const { return coll == Coll::Send ? const_cast<void*>(in) : out; }
};

// Bytes of the user's message, as cocclCollStats_t.logicalBytes reports them: AllReduce,
// Broadcast, Reduce count elements; ReduceScatter and AllGather count x nranks; Send and
// Recv their count.
size_t logicalBytes(const CollRequest& r, int nranks);

}  // namespace coccl
