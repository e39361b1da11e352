// Plain data shared by the host side (cuda_ipc_executor.cc) and the kernels (*.cu) of the device
// collectives: the per-communicator context, the region layout, the kernel arguments.
// No CUDA types: host-only translation units include this too.
//
// ---- Region layout (one CUDA IPC region per rank, see transport/cuda_ipc) --------------------
// p ranks, NB thread blocks per kernel ("channels"; block b of every rank only ever talks to
// block b of the others), S sub-slot bytes. In rank x's region:
//   push[q][b]   u64  rank q has written round `value` of its data for x into x's inbox
//   pull[q][b]   u64  rank q's outbox holds round `value` (for x to read)
//   free[q][b]   u64  rank q has finished reading everything x produced for it (its inbox slot
//                     from x, x's outbox) up to round `value`
//   seq[q][b]    u64  (local only) the last round x used with peer q on channel b
//   cseq[b]      u64  (local only) collective rounds run on channel b (outbox parity)
//   err          u32  (local only) first failure of any block (then mirrored to the host)
//   agreeFlag[q][b] u64  rank q has written its descriptor of its agreement `value` on channel
//                     b into agree[value & 1][q][b] (below)
//   agreeCnt[b]  u64  (local only) collective calls run on channel b (their agreement number)
//   agree[2][p][NB]   128-byte call descriptors (collectives/call_desc.h) that rank q wrote here
//   inbox[2][p-1][NB][S]   slot d = (q - x - 1) mod p receives rank q's data; parity = round & 1
//   outbox[2][NB][S]       x's data that every peer reads; parity = cseq & 1
// Flags live in the memory of the rank that waits on them (every wait polls local memory).
#pragma once

#include <cstdint>

#include "kernels/codec_desc.h"

namespace coccl {
namespace dev {

constexpr int kMaxRanks = 32;       // ranks of one node on the device path
constexpr int kMaxBlocks = 128;     // COCCL_DEVICE_BLOCKS upper bound
constexpr int kThreads = 256;       // threads per block of every collective kernel
// Blocks of one collective call: about one per kCallBlockBytes of message, at least
// kMinCallBlocks, at most the communicator's (the measurements behind the rule:
// perf/RESULTS.md, "Blocks per call").
constexpr uint64_t kCallBlockBytes = 256 << 10;
constexpr int kMinCallBlocks = 16;
// COCCL_DEVICE_BLOCKS=0 (auto): a communicator's blocks (channels) when no two ranks share a
// GPU, and at most when some do: their kernels then share the SMs, and a block must never wait
// for a block that cannot become resident (collectives/cuda_ipc/residency.h).
constexpr int kAutoBlocksOwnGpu = 128;
constexpr int kAutoBlocksSharedGpu = 32;

// The auto choice for a communicator with at most `perGpu` of its ranks on one GPU that holds
// `resident` blocks of coccl's kernels at once (0: unknown): kAutoBlocksOwnGpu (at most the
// capacity) on a GPU of its own; on a shared GPU each rank's kernel gets half of its share,
// resident / (2 perGpu), room for a second collective in flight on each rank, at most
// kAutoBlocksSharedGpu and at least 1. Equal on every rank (from values every rank has).
inline int autoBlocks(int perGpu, int resident) {
  if (perGpu <= 1)
    return resident > 0 && resident < kAutoBlocksOwnGpu ? resident : kAutoBlocksOwnGpu;
  if (resident <= 0) return kAutoBlocksSharedGpu;
  const int share = resident / (2 * perGpu);
  return share < 1 ? 1 : share > kAutoBlocksSharedGpu ? kAutoBlocksSharedGpu : share;
}
constexpr uint64_t kPoison = ~uint64_t{0};  // flag value of a failed / aborted rank
constexpr uint64_t kSlotAlign = 256;

// A call's agreement descriptor as the kernels see it: the 128 bytes of a CallDesc
// (collectives/call_desc.h), compared word by word.
struct AgreeDesc {
  uint64_t w[16];
};

// Host-mapped pinned memory (cudaHostAllocMapped): the host raises `abort`, kernels copy the
// first failure (decided with a device-memory atomic: no atomics on host memory over PCIe) into
// `error` with plain stores.
struct HostState {
  volatile uint32_t abort;  // cocclCommAbort: running and later kernels stop
  uint32_t error;           // first device failure (DevError), 0 = none
  int32_t errPeer;          // the rank waited for (kDevMismatch: the rank that differs)
  int32_t errBlock;
  AgreeDesc mine, theirs;   // kDevMismatch: this rank's descriptor and errPeer's
  uint32_t errFrom;         // kDevMismatch of a call descriptor: where it was compared (AgreeFrom)
  // The call whose kernel raised `error`: its descriptor's hash word (AgreeDesc::w[kCallIdWord]),
  // 0 for a kernel that carries none. Written before `error`. A staged exchange's channel that
  // failed in chanBegin posts its descriptor only when the failure is its own call's
  // (agreePost): a later call's kernel must not overwrite the slot its peers may still read.
  uint64_t errCall;
};

// The word of an AgreeDesc that identifies a call (CallDesc::hash: FNV-1a of every compared
// field, the call number included).
constexpr int kCallIdWord = 8;

// Where a call's descriptors were compared (agreeCall): the collective's own kernel, or the
// first exchange of the staged codec pipeline (P2PArgs::callAgree), whose codec kernels run on
// the caller's stream around the exchanges.
enum AgreeFrom : uint32_t { kAgreeInCollective = 0, kAgreeInStagedExchange = 1 };

enum DevError : uint32_t {
  kDevOk = 0,
  kDevTimeout = 1,     // a wait ran past COCCL_TIMEOUT_MS
  kDevPeerFailed = 2,  // a peer poisoned its flags (it failed or aborted)
  kDevAborted = 3,     // this rank was aborted
  kDevMismatch = 4,    // a peer's call descriptor differs from this rank's (HostState mine/theirs)
};

struct Layout {
  int32_t nranks = 0;
  int32_t nblocks = 0;
  uint64_t sub = 0;  // bytes of one sub-slot
  uint64_t offPush = 0, offPull = 0, offFree = 0, offSeq = 0, offCseq = 0, offErr = 0;
  uint64_t offAgreeFlag = 0, offAgreeCnt = 0, offAgree = 0;
  uint64_t offInbox = 0, offOutbox = 0;
  uint64_t total = 0;
};

// Sub-slot size and offsets for a region of about `stagingBytes` bytes.
inline Layout makeLayout(int p, int nb, uint64_t stagingBytes) {
  Layout l;
  l.nranks = p;
  l.nblocks = nb;
  const uint64_t flagBytes = static_cast<uint64_t>(p) * static_cast<uint64_t>(nb) * 8;
  auto up = [](uint64_t v, uint64_t a) { return (v + a - 1) / a * a; };
  l.offPush = 0;
  l.offPull = up(l.offPush + flagBytes, 128);
  l.offFree = up(l.offPull + flagBytes, 128);
  l.offSeq = up(l.offFree + flagBytes, 128);
  l.offCseq = up(l.offSeq + flagBytes, 128);
  l.offErr = up(l.offCseq + static_cast<uint64_t>(nb) * 8, 128);
  l.offAgreeFlag = up(l.offErr + 128, 128);
  l.offAgreeCnt = up(l.offAgreeFlag + flagBytes, 128);
  l.offAgree = up(l.offAgreeCnt + static_cast<uint64_t>(nb) * 8, 128);
  l.offInbox = up(l.offAgree + 2 * flagBytes * sizeof(AgreeDesc) / 8, 4096);
  // inbox 2*(p-1)*NB sub-slots, outbox 2*NB: 2*p*NB sub-slots in all.
  const uint64_t slots = 2 * static_cast<uint64_t>(p) * static_cast<uint64_t>(nb);
  uint64_t sub = stagingBytes / slots / kSlotAlign * kSlotAlign;
  if (sub < 4 * kSlotAlign) sub = 4 * kSlotAlign;
  l.sub = sub;
  l.offOutbox = l.offInbox + 2 * static_cast<uint64_t>(p - 1) * static_cast<uint64_t>(nb) * sub;
  l.total = l.offOutbox + 2 * static_cast<uint64_t>(nb) * sub;
  return l;
}

// Per-communicator constants, copied once into device memory.
struct Ctx {
  int32_t rank;
  int32_t nranks;
  int32_t nblocks;
  int32_t pad0;
  uint64_t timeoutNs;
  Layout lay;
  HostState* host;  // device pointer of the mapped host state
  // COCCL_PHASE_TIMES=1: device memory of kMaxBlocks x kPhaseWords counters (PhaseWord) that
  // block b of every collective kernel adds its phases' times to; null: not timed.
  uint64_t* phases;
  char* base[kMaxRanks];  // every rank's region, as mapped on this rank
};

// The collective kernels' phases (COCCL_PHASE_TIMES, kernel_common.cuh PhaseClock), in the
// order of cocclPhase_t (coccl_query.h): nanoseconds of %globaltimer summed over rounds, per
// block. Reduce family: kPhPushWait / kPhPush the encode-on-send into the owners' inboxes (the
// wait for their free flags, then the work and the signal), kPhOwnWait / kPhOwn the owner step
// (the wait for the inputs, then the reduce, its encode and the own output), kPhPullWait /
// kPhPull the decode of every owner's result. Gather family: kPhPush* the producer's encode into
// its outbox (and its own output), kPhPull* the decode of the peers' outboxes. kPhAgree: the
// call's agreement; kPhTotal: the block's time from its start to its end.
enum PhaseWord : int {
  kPhAgree = 0,
  kPhPushWait,
  kPhPush,
  kPhOwnWait,
  kPhOwn,
  kPhPullWait,
  kPhPull,
  kPhTotal,
  kPhases,
  kPhRuns = kPhases,  // kernels block b ran
  kPhRounds,          // rounds block b ran
  kPhaseWords
};
static_assert(kPhases == 8 && kPhaseWords == 10,
              "cocclPhase_t (coccl_query.h) and cocclCommGetPhaseTimes follow this order");

enum class Coll : int32_t { AllReduce = 0, ReduceScatter = 1, Reduce = 2, AllGather = 3, Broadcast = 4 };

// Messages are cut into rounds; round k of a shard covers elements [k*R, (k+1)*R) of it with
// R = nblocks * partCap, and that piece is split over the blocks in whole `unit`s (balanced), so
// every part fits one sub-slot. nblocks is the call's: a collective uses the first nblocks
// channels (fewer for small messages); channels keep their own round numbers, so consecutive
// calls may use different numbers of them. Every rank runs `rounds` rounds with every peer.
struct ReduceArgs {  // AllReduce, ReduceScatter, Reduce
  int32_t coll;
  int32_t dtype;    // cocclDataType_t
  int32_t op;       // cocclRedOp_t
  int32_t root;     // Reduce
  const void* in;
  void* out;
  uint64_t count;   // AllReduce/Reduce: count; ReduceScatter: recvcount
  uint64_t unit;    // elements; shard and part boundaries are multiples of it
  uint64_t partCap; // elements of one part (multiple of unit)
  uint32_t rounds;
  int32_t compressed;
  float scale;      // 1 or 1/p (AVG, compressed)
  int32_t avgDiv;   // p (AVG, exact)
  int32_t esize;    // bytes per element
  int32_t nblocks;  // blocks (channels 0..nblocks-1) of this call, <= Ctx::nblocks
  // compressed: the kernel's phases stage their tiles through its codec rings of shared memory
  // (codec_ops.cuh). The executor asks for them (COCCL_DEVICE_CODEC_RINGS); the launcher
  // (kernels_codec.inc) clears it where the device does not give the kernel that memory.
  int32_t staged;
  CodecDesc codec;
  AgreeDesc desc;   // compared with every peer's before any data moves (agreeCall)
};

struct GatherArgs {  // AllGather, Broadcast
  int32_t coll;
  int32_t dtype;
  int32_t root;     // Broadcast
  int32_t compressed;
  const void* in;
  void* out;
  uint64_t count;   // elements (compressed) or bytes (exact) of one shard / the message
  uint64_t unit;
  uint64_t partCap;
  uint32_t rounds;
  int32_t esize;    // bytes per element (exact: 1, counts are bytes)
  int32_t nblocks;  // blocks (channels 0..nblocks-1) of this call, <= Ctx::nblocks
  int32_t staged;   // as ReduceArgs::staged
  CodecDesc codec;
  AgreeDesc desc;   // compared with every peer's before any data moves (agreeCall)
};

constexpr int kMaxP2P = 96;  // send/recv operations of one group on one communicator

// The pair descriptor of device Send/Recv (P2PArgs::agree), in AgreeDesc words: what this rank
// sends to a peer and receives from it in one group, messages in posting order. The two ends
// agree when one's sends equal the other's receives (count, bytes, sizes hash) both ways.
// The sizes hash is FNV-1a over the messages' byte counts as 64-bit words.
constexpr uint64_t kP2PPairMagic = 0x31504343u;  // "CCP1"
enum P2PPairWord : int {
  kPairMagic = 0,
  kPairSends,
  kPairSendBytes,
  kPairSendHash,
  kPairRecvs,
  kPairRecvBytes,
  kPairRecvHash,
  kPairWords
};

struct P2PMsg {
  void* buf;  // send: source, recv: destination
  uint64_t bytes;
  int32_t peer;
  int32_t send;
};

struct P2PArgs {
  int32_t nmsgs;
  int32_t nblocks;  // always Ctx::nblocks: the two ends of a message see different groups
  uint32_t maxRounds;
  // 1: the two ends of every pair compare their pair descriptors (P2PPairWord) in one round
  // before any data moves (user Send/Recv); 0: no pair agreement (the staged pipeline's
  // exchanges: the sizes follow from the call's plan on each rank).
  uint32_t agree;
  // 1: every block compares `desc` with every rank's, whatever the group: posted before the
  // rounds, compared after them (agreePost / agreeCheck in kernel_common.cuh); the first
  // exchange of a staged codec pipeline call (staged_codec.h); 0: none.
  uint32_t callAgree;
  uint32_t pad;
  uint64_t roundBytes;           // bytes of one round (nblocks * partCap)
  uint64_t partCap;              // bytes of one part (<= sub-slot)
  uint32_t peerRounds[kMaxRanks];  // rounds with each peer: max(send rounds, recv rounds)
  AgreeDesc desc;                  // callAgree: the call's descriptor
  P2PMsg msgs[kMaxP2P];
};

}  // namespace dev
}  // namespace coccl
