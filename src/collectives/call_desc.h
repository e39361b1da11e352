// The agreement descriptor of one collective call, shared by every executor (host over UCX,
// CUDA IPC, NCCL): what a rank is about to do, compared with its peers' before any data is
// touched, so that ranks that disagree on count, type, op, root, codec or call number get
// cocclInvalidUsage on every rank instead of a silent wrong answer (README "Agreement").
//
// Where it travels:
//   host (collectives/host/agree_call.h): every rank sends its 128-byte descriptor to every
//     peer on a tag of its own that carries no call number (a FIFO per pair of ranks, so a
//     rank that skipped a call meets its peers' previous call and the `seq` field tells), then
//     compares all p descriptors: every rank holds the same p descriptors, so every rank
//     reaches the same verdict with the same message. Small first data messages may already
//     be on their way (eagerBytes); nothing is received into, or written to, recvbuff before
//     the check passes, and on a mismatch the eager messages are drained into pool buffers, so
//     the transport stays in step (the communicator stays usable for calls that agree; a `seq`
//     difference means the ranks are out of step and every later call will differ too:
//     destroy the communicator).
//   CUDA IPC (cuda_ipc/kernel_common.cuh agreeCall): every block of a collective kernel writes
//     the descriptor into every peer's region and raises a flag, waits for every peer's, and
//     compares the 128 bytes before any data moves; a difference is the asynchronous error
//     kDevMismatch (cocclInvalidUsage from cocclCommGetAsyncError on every rank, the message of
//     callDescPairMismatch on the next call); the communicator is then broken. The staged
//     codec pipeline's first exchange posts its descriptor at its start and compares at its
//     end (agreePost / agreeCheck): its pieces only reach staging buffers meanwhile.
//   The `hash` (FNV-1a of every field before it) is there for transports that can only
//   compare 8 bytes cheaply.
//
// Sequence number: the communicator counts every collective call that reaches the C API with
// a usable communicator (Communicator::nextCallSeq), including calls that then fail their own
// argument checks and count-0 calls (which stay no-ops: no descriptor is sent), so a rank whose
// call failed locally is seen one call ahead by its peers.
//
// Layout (128 bytes, little-endian as the hosts store it; the wire carries the struct bytes):
//   magic u32 'CCD1' | version u16 | coll u16 | seq u64 | count u64 (elements as the API counts
//   them) | dtype u32 | op u32 | root i32 | codecFormat u32 (formatVersion, 0 exact) |
//   codecHash u64 (FNV-1a of the canonical spec, 0 exact) | interFormat u32 | eagerBytes u32
//   (host only, not compared) | interHash u64 (the inter-node codec of a two-level entry, 0
//   none) | hash u64 (FNV-1a of the 72 bytes before it, eagerBytes as 0) | codec char[56]
//   ("spec" or "spec|inter spec", cut, NUL-ended).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/request.h"
#include "core/hash.h"  // fnv1a64

namespace coccl {

constexpr uint32_t kCallDescMagic = 0x31444343u;  // "CCD1"
constexpr uint16_t kCallDescVersion = 1;

struct CallDesc {
  uint32_t magic = kCallDescMagic;
  uint16_t version = kCallDescVersion;
  uint16_t coll = 0;
  uint64_t seq = 0;
  uint64_t count = 0;
  uint32_t dtype = 0;
  uint32_t op = 0;
  int32_t root = 0;
  uint32_t codecFormat = 0;
  uint64_t codecHash = 0;
  uint32_t interFormat = 0;
  // Host path only, not compared and not hashed (0 when hashing): the bytes of the data
  // message the sender sent to this receiver right behind the descriptor (agree_call.h).
  uint32_t eagerBytes = 0;
  uint64_t interHash = 0;
  uint64_t hash = 0;
  char codec[56] = {};
};
static_assert(sizeof(CallDesc) == 128, "the call descriptor is 128 bytes on the wire");
constexpr size_t kCallDescHashedBytes = offsetof(CallDesc, hash);

// Where the descriptors of a call travel inside the payload transfers of a device exchange
// (the staged pipeline's first exchange over NCCL, staged/call_check.h): 128 bytes in front of
// each payload. The transfer to peer j begins with the head at send + j * sendStride
// (sendStride 0: one head sent to every peer); the one from peer j lands its head at
// recv + j * recvStride. Device addresses.
struct DescHeads {
  char* send = nullptr;
  size_t sendStride = 0;
  char* recv = nullptr;
  size_t recvStride = 0;
};

// The descriptor held in 128 bytes at `p` (as a device path stored it).
CallDesc callDescFromBytes(const void* p);

// The descriptor's `hash`: FNV-1a of its first kCallDescHashedBytes bytes, eagerBytes as 0.
uint64_t callDescHash(const CallDesc& d);

// The descriptor of `r` as this rank will run it (r.codec / r.interCodec after routing; the
// root only for Broadcast and Reduce, the op only for reducing collectives, so that fields
// the call ignores cannot differ).
CallDesc makeCallDesc(const CollRequest& r);

// "" when all `n` descriptors (all[r] from rank r) agree; else one message naming every field
// that differs, each with rank 0's value and the first differing rank's value, e.g.
// "AllReduce (call 3): ranks disagree: count differs: 409600 on rank 0, 409598 on rank 3".
// A descriptor with a wrong magic or version is named as such. Pure: the same input gives the
// same message on every rank.
std::string callDescMismatch(const CallDesc* all, int n);

// The same message for two descriptors only (a device path that learned one peer's): "" when
// they agree, else every differing field with `mine` on `myRank` and `theirs` on `peer`.
std::string callDescPairMismatch(const CallDesc& mine, int myRank, const CallDesc& theirs,
                                 int peer);

}  // namespace coccl
