// Compressed Send/Recv on device buffers (cocclSend / cocclRecv with a codec that has device
// operations, include/coccl.h), on whichever device executor moves the group's bytes (CUDA
// IPC's P2P kernel or NCCL's grouped ncclSend/ncclRecv): the sender encodes into a staging
// buffer on its stream (codec->deviceEncode), the bytes move as an exact byte Send/Recv, the
// receiver decodes from its staging buffer into recvbuff on its stream (codec->deviceDecode).
// The bytes equal the host path's (the codecs' device operations equal their host ones).
//
// Agreement (the header of collectives/p2p_header.h, over the bootstrap's TCP connections):
//   sender:   sends its Sender header (count, type, codec, payload bytes), enqueues encode +
//             payload and returns: it never waits for the receiver (asynchronous, as NCCL).
//   receiver: waits (COCCL_TIMEOUT_MS at most) for the sender's header, runs p2pMismatch, and
//             sends its own Receiver header back as the verdict. Agreed: receive + decode.
//             Disagreed: the sender's payload is received into staging and dropped (the
//             transport stays in step, recvbuff is not written) and the receiver returns
//             cocclInvalidUsage with the message naming each field and both values.
//   sender, later: each Send/Recv group on the communicator first reads the verdicts that
//             arrived (without waiting); a disagreeing one makes that group return
//             cocclInvalidUsage with the same message, after its own operations ran.
// So a receiver blocks its thread until the sender posted: a program whose two ranks both
// post a Recv before their Send outside a group (which NCCL runs on separate streams) must
// group them (ncclGroupStart/End, as PyTorch's batch_isend_irecv does).
//
// Staging: cudaMallocFromPoolAsync / cudaFreeAsync on the op's stream from a pool of the
// communicator's own that keeps its memory (no cudaMalloc and no host wait on the call path, no
// reuse before the stream has passed the last use). Not CUDA-graph capturable: the agreement
// is host work of each call (cocclInvalidUsage inside a capture).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/request.h"
#include "collectives/stats.h"

namespace coccl {

class Bootstrap;

class DeviceP2P {
 public:
  // Runs an exact group of byte Send/Recv on device buffers (the communicator's router and
  // the executor it picks).
  using Move = std::function<void(const std::vector<CollRequest>&, CollStats&)>;
  DeviceP2P(int device, int rank, int nranks, Bootstrap& bootstrap);
  ~DeviceP2P();
  DeviceP2P(const DeviceP2P&) = delete;
  DeviceP2P& operator=(const DeviceP2P&) = delete;

  // `group`: device Send/Recv, those with a codec (which has device operations) compressed,
  // the others moved as they are. Sets stats.wireBytesSent (payloads + the 128-byte headers
  // and verdicts this rank sent) and stats.algorithm ("p2p-codec/<the mover's>"). Throws
  // cocclInvalidUsage for a disagreeing pair (see above).
  void run(const std::vector<CollRequest>& group, const Move& move, CollStats& stats);
  // True when this build has the device part (CUDA builds).
  static bool built();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coccl
