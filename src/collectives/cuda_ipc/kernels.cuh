// The collective kernels' round loops (see cuda_ipc_executor.cc for the protocol). One grid of
// nblocks blocks per call; block b of every rank forms channel b and only exchanges flags and
// sub-slots with block b of the other ranks, so blocks never wait for each other and no
// grid-wide synchronisation is needed.
//
// Reduce family (AllReduce, ReduceScatter, Reduce), per round, block b of rank x:
//   1. push:   for each owner j != x: wait until j freed x's inbox slot of this parity (free
//              flag >= round - 2), encode (or copy) part b of x's input for shard j into it,
//              raise j.push[x] = round;
//   2. owner:  wait push[q] == round from every q (and, AllReduce, free[r] >= round - 2 for the
//              outbox), reduce the p inputs in rank order (own input raw) in fp32 (or the exact
//              type), write the output part (and the AllReduce result, encoded once, into the
//              outbox), raise r.pull[x] = round for every r;
//   3. gather: (AllReduce) for each owner j: wait pull[j] == round, decode j's outbox part into
//              the output (every rank decodes the same bytes);
//   then raise r.free[x] = round for every peer r.
// Gather family (AllGather, Broadcast): the producer(s) fill their outbox and raise pull; the
// others read it; then free. Send/Recv: the sender pushes into the receiver's inbox.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "collectives/cuda_ipc/codec_ops.cuh"
#include "collectives/cuda_ipc/exact_reduce.cuh"
#include "collectives/cuda_ipc/kernel_common.cuh"

namespace coccl {
namespace dev {

// ---- data movement policies -----------------------------------------------------------------

template <class Fam, int G, class Tag>
struct CodecMode {
  using T = typename Tag::T;
  using Ops = CodecOps<Fam, G, Tag>;
  __device__ static void push(const ReduceArgs& a, const char* src, uint64_t n, uint8_t* dst) {
    Ops::encode(a.codec, reinterpret_cast<const T*>(src), n, dst, Ops::warpStage(a.staged));
  }
  __device__ static void own(const ReduceArgs& a, const uint8_t* const* ins, int p, int self,
                             uint64_t n, char* userOut, uint8_t* outbox) {
    Ops::reduce(a.codec, ins, p, self, reinterpret_cast<const T*>(ins[self]), n, a.scale, outbox,
                reinterpret_cast<T*>(userOut), Ops::warpStage(a.staged));
  }
  __device__ static void pull(const ReduceArgs& a, const uint8_t* src, uint64_t n, char* dst) {
    Ops::decode(a.codec, src, n, reinterpret_cast<T*>(dst), Ops::warpStage(a.staged));
  }
  // Gather family: encode own part into the outbox and decode it into the own output slot.
  __device__ static void produce(const GatherArgs& a, const char* src, uint64_t n, uint8_t* ob,
                                 char* dst) {
    uint8_t* stage = Ops::warpStage(a.staged);
    Ops::encode(a.codec, reinterpret_cast<const T*>(src), n, ob, stage);
    __syncthreads();
    Ops::decode(a.codec, ob, n, reinterpret_cast<T*>(dst), stage);
  }
  __device__ static void consume(const GatherArgs& a, const uint8_t* src, uint64_t n, char* dst) {
    Ops::decode(a.codec, src, n, reinterpret_cast<T*>(dst), Ops::warpStage(a.staged));
  }
};

struct ExactMode {
  __device__ static void push(const ReduceArgs& a, const char* src, uint64_t n, uint8_t* dst) {
    copyBytes(dst, src, n * static_cast<uint64_t>(a.esize));
  }
  __device__ static void own(const ReduceArgs& a, const uint8_t* const* ins, int p, int self,
                             uint64_t n, char* userOut, uint8_t* outbox) {
    if (n)
      reduceExact(a.dtype, reinterpret_cast<const void* const*>(ins), p, n, a.op, a.avgDiv,
                  userOut, outbox);
  }
  __device__ static void pull(const ReduceArgs& a, const uint8_t* src, uint64_t n, char* dst) {
    copyBytes(dst, src, n * static_cast<uint64_t>(a.esize));
  }
  __device__ static void produce(const GatherArgs& a, const char* src, uint64_t n, uint8_t* ob,
                                 char* dst) {
    copyBytes(ob, src, n);
    copyBytes(dst, src, n);  // nothing when in place (dst == src)
  }
  __device__ static void consume(const GatherArgs& a, const uint8_t* src, uint64_t n, char* dst) {
    copyBytes(dst, src, n);
  }
};

// ---- reduce family ------------------------------------------------------------------------------

template <class M>
__device__ bool reduceRounds(Chan& ch, const ReduceArgs& a, const uint8_t** ins) {
  const int p = ch.c.nranks, me = ch.c.rank, nb = a.nblocks;
  const Coll coll = static_cast<Coll>(a.coll);
  const bool ar = coll == Coll::AllReduce, red = coll == Coll::Reduce;
  const uint64_t es = static_cast<uint64_t>(a.esize);
  const char* in = static_cast<const char*>(a.in);
  char* out = static_cast<char*>(a.out);
  const Layout& L = ch.c.lay;
  auto shardOf = [&](int j) -> Range {
    if (ar) return balancedShard(a.count, p, j, a.unit);
    if (red) return Range{0, a.count};
    return Range{static_cast<uint64_t>(j) * a.count, a.count};
  };
  for (uint32_t k = 0; k < a.rounds; ++k) {
    nextRound(ch, true);
    // 1. encode-on-send into every owner's inbox
    for (int d = 1; d < p; ++d) {
      const int j = (me + d) % p;
      if (red && j != a.root) continue;
      if (!waitPeers(ch, L.offFree, 2, j)) return false;
      phaseMark(ch, kPhPushWait);
      const Range sh = shardOf(j);
      const Range pt = partOf(sh.count, k, ch.b, nb, a.unit, a.partCap);
      M::push(a, in + (sh.begin + pt.begin) * es, pt.count, inboxAt(ch, j, me, ch.seq[j]));
      __syncthreads();
      signalPeers(ch, L.offPush, j);
      phaseMark(ch, kPhPush);
    }
    // 2. owner: decode-reduce-(re-encode) of the p inputs of its shard
    if (!red || me == a.root) {
      if (!waitPeers(ch, L.offPush, 0)) return false;
      if (ar && !waitPeers(ch, L.offFree, 2)) return false;
      phaseMark(ch, kPhOwnWait);
      const Range sh = shardOf(me);
      const Range pt = partOf(sh.count, k, ch.b, nb, a.unit, a.partCap);
      if (tid() < p)
        ins[tid()] = tid() == me
                         ? reinterpret_cast<const uint8_t*>(in + (sh.begin + pt.begin) * es)
                         : inboxAt(ch, me, tid(), ch.seq[tid()]);
      __syncthreads();
      char* userOut = out + ((ar ? sh.begin : 0) + pt.begin) * es;
      M::own(a, ins, p, me, pt.count, userOut, ar ? outboxAt(ch, me) : nullptr);
      __syncthreads();
      if (ar) signalPeers(ch, L.offPull);
      phaseMark(ch, kPhOwn);
    }
    // 3. AllReduce: every owner's result part, decoded from the same bytes on every rank
    if (ar) {
      for (int d = 1; d < p; ++d) {
        const int j = (me + d) % p;
        if (!waitPeers(ch, L.offPull, 0, j)) return false;
        phaseMark(ch, kPhPullWait);
        const Range sh = shardOf(j);
        const Range pt = partOf(sh.count, k, ch.b, nb, a.unit, a.partCap);
        M::pull(a, outboxAt(ch, j), pt.count, out + (sh.begin + pt.begin) * es);
        phaseMark(ch, kPhPull);
      }
    }
    __syncthreads();
    signalPeers(ch, L.offFree);
  }
  return true;
}

template <class M>
__device__ void reduceKernelBody(const Ctx* g, const ReduceArgs& a) {
  __shared__ Chan ch;
  __shared__ const uint8_t* ins[kMaxRanks];
  if (chanBegin(ch, g)) {
    phaseStart(ch);
    if (agreeCall(ch, a.desc)) {
      phaseMark(ch, kPhAgree);
      reduceRounds<M>(ch, a, ins);  // on failure ch.failed is set
    }
    phaseEnd(ch, a.rounds);
  }
  chanEnd(ch);
}

// ---- gather family ------------------------------------------------------------------------------

template <class M>
__device__ bool gatherRounds(Chan& ch, const GatherArgs& a) {
  const int p = ch.c.nranks, me = ch.c.rank, nb = a.nblocks;
  const bool bc = static_cast<Coll>(a.coll) == Coll::Broadcast;
  const uint64_t es = static_cast<uint64_t>(a.esize);
  const char* in = static_cast<const char*>(a.in);
  char* out = static_cast<char*>(a.out);
  const Layout& L = ch.c.lay;
  auto slot = [&](int j) -> uint64_t { return bc ? 0 : static_cast<uint64_t>(j) * a.count; };
  for (uint32_t k = 0; k < a.rounds; ++k) {
    nextRound(ch, true);
    const Range pt = partOf(a.count, k, ch.b, nb, a.unit, a.partCap);
    if (!bc || me == a.root) {
      if (!waitPeers(ch, L.offFree, 2)) return false;
      phaseMark(ch, kPhPushWait);
      M::produce(a, in + pt.begin * es, pt.count, outboxAt(ch, me),
                 out + (slot(me) + pt.begin) * es);
      __syncthreads();
      signalPeers(ch, L.offPull);
      phaseMark(ch, kPhPush);
    }
    for (int d = 1; d < p; ++d) {
      const int j = (me + d) % p;
      if (bc && j != a.root) continue;
      if (!waitPeers(ch, L.offPull, 0, j)) return false;
      phaseMark(ch, kPhPullWait);
      M::consume(a, outboxAt(ch, j), pt.count, out + (slot(j) + pt.begin) * es);
      phaseMark(ch, kPhPull);
    }
    __syncthreads();
    signalPeers(ch, L.offFree);
  }
  return true;
}

template <class M>
__device__ void gatherKernelBody(const Ctx* g, const GatherArgs& a) {
  __shared__ Chan ch;
  if (chanBegin(ch, g)) {
    phaseStart(ch);
    if (agreeCall(ch, a.desc)) {
      phaseMark(ch, kPhAgree);
      gatherRounds<M>(ch, a);
    }
    phaseEnd(ch, a.rounds);
  }
  chanEnd(ch);
}

// ---- Send/Recv ------------------------------------------------------------------------------
// Every operation of a group on this communicator is in one kernel. With each peer j the pair
// runs rounds t = 0 .. peerRounds[j]-1 (the same count on both sides: max of the rounds of what
// x sends to j and what j sends to x); in round t x first pushes its t-th chunk for j into j's
// inbox, then (after all its pushes of round t) takes j's t-th chunk from its own inbox and
// acknowledges. Inbox slots are double buffered like the collectives' (pair round parity).
// Deadlock-free: round t of any pair only needs rounds < t of the others done.

// The t-th chunk (roundBytes each) of the stream of messages to / from `peer`, in posting order.
struct Chunk {
  int msg;       // -1: none
  uint64_t off;  // byte offset in the message
  uint64_t bytes;
};

__device__ __forceinline__ Chunk chunkOf(const P2PArgs& a, int peer, bool send, uint64_t t) {
  for (int m = 0; m < a.nmsgs; ++m) {
    const P2PMsg& x = a.msgs[m];
    if (x.peer != peer || (x.send != 0) != send || x.bytes == 0) continue;
    const uint64_t r = (x.bytes + a.roundBytes - 1) / a.roundBytes;
    if (t < r) {
      const uint64_t off = t * a.roundBytes;
      const uint64_t left = x.bytes - off;
      return Chunk{m, off, left < a.roundBytes ? left : a.roundBytes};
    }
    t -= r;
  }
  return Chunk{-1, 0, 0};
}

// This rank's pair descriptor with `peer` (P2PPairWord) into w[0..kPairWords).
__device__ __forceinline__ void p2pPairDesc(const P2PArgs& a, int peer, uint64_t* w) {
  constexpr uint64_t kBasis = 14695981039346656037ull, kPrime = 1099511628211ull;
  uint64_t n[2] = {0, 0}, bytes[2] = {0, 0}, h[2] = {kBasis, kBasis};  // [0] recvs, [1] sends
  for (int m = 0; m < a.nmsgs; ++m) {
    const P2PMsg& x = a.msgs[m];
    if (x.peer != peer) continue;
    const int k = x.send ? 1 : 0;
    n[k] += 1;
    bytes[k] += x.bytes;
    h[k] = (h[k] ^ x.bytes) * kPrime;
  }
  w[kPairMagic] = kP2PPairMagic;
  w[kPairSends] = n[1];
  w[kPairSendBytes] = bytes[1];
  w[kPairSendHash] = h[1];
  w[kPairRecvs] = n[0];
  w[kPairRecvBytes] = bytes[0];
  w[kPairRecvHash] = h[0];
}

// True when `theirs` (the peer's pair descriptor) sends what `mine` receives and receives what
// it sends.
__device__ __forceinline__ bool p2pPairsMatch(const uint64_t* mine, const uint64_t* theirs) {
  bool same = theirs[kPairMagic] == kP2PPairMagic;
  for (int i = 0; i < 3; ++i)
    same = same && theirs[kPairSends + i] == mine[kPairRecvs + i] &&
           theirs[kPairRecvs + i] == mine[kPairSends + i];
  return same;
}

// The pair agreement of a group (P2PArgs::agree): with each peer it has rounds with, every block
// first exchanges the pair descriptors through the inbox, as one more round of the pair, and
// compares them; a difference records kDevMismatch (both descriptors go to the host state) and
// fails the block before any data moves, on both ends (each compares). Messages to self are
// compared locally. A peer that has no rounds with this rank while this rank has some with it
// is not met here: this rank's wait for it ends at COCCL_TIMEOUT_MS. False when the block failed.
__device__ __forceinline__ bool p2pAgree(Chan& ch, const P2PArgs& a) {
  const int p = ch.c.nranks, me = ch.c.rank;
  const Layout& L = ch.c.lay;
  __shared__ uint64_t pd[kMaxRanks][kPairWords];
  __syncthreads();  // pd of a previous use
  if (tid() < p) p2pPairDesc(a, tid(), pd[tid()]);
  __syncthreads();
  if (tid() == 0 && !p2pPairsMatch(pd[me], pd[me])) {
    AgreeDesc m{};
    for (int i = 0; i < kPairWords; ++i) m.w[i] = pd[me][i];
    recordMismatch(ch, me, m, m.w);
  }
  if (tid() < p && tid() != me && a.peerRounds[tid()] > 0) ch.seq[tid()] += 1;
  __syncthreads();
  for (int d = 1; d < p; ++d) {
    const int j = (me + d) % p;
    if (a.peerRounds[j] == 0) continue;
    if (!waitPeers(ch, L.offFree, 2, j)) return false;
    if (tid() < kPairWords)
      reinterpret_cast<volatile uint64_t*>(inboxAt(ch, j, me, ch.seq[j]))[tid()] = pd[j][tid()];
    __syncthreads();
    signalPeers(ch, L.offPush, j);
  }
  for (int d = 1; d < p; ++d) {
    const int j = (me - d + p) % p;
    if (a.peerRounds[j] == 0) continue;
    if (!waitPeers(ch, L.offPush, 0, j)) return false;
    if (tid() == 0) {
      const volatile uint64_t* in =
          reinterpret_cast<const volatile uint64_t*>(inboxAt(ch, me, j, ch.seq[j]));
      uint64_t theirs[16] = {};
      for (int i = 0; i < kPairWords; ++i) theirs[i] = in[i];
      if (!p2pPairsMatch(pd[j], theirs)) {
        AgreeDesc m{};
        for (int i = 0; i < kPairWords; ++i) m.w[i] = pd[j][i];
        recordMismatch(ch, j, m, theirs);
      }
    }
    __syncthreads();
    signalPeers(ch, L.offFree, j);
  }
  __syncthreads();
  return !ch.failed;
}

__device__ __forceinline__ bool p2pRounds(Chan& ch, const P2PArgs& a) {
  const int p = ch.c.nranks, me = ch.c.rank, nb = a.nblocks;
  const Layout& L = ch.c.lay;
  // Messages to self: the k-th send to self goes to the k-th receive from self.
  {
    int s = 0;
    for (int r = 0; r < a.nmsgs; ++r) {
      const P2PMsg& rv = a.msgs[r];
      if (rv.peer != me || rv.send) continue;
      while (s < a.nmsgs && !(a.msgs[s].peer == me && a.msgs[s].send)) ++s;
      if (s == a.nmsgs) break;
      const P2PMsg& sd = a.msgs[s++];
      const uint64_t n = sd.bytes < rv.bytes ? sd.bytes : rv.bytes;
      const Range pt = partOf(n, 0, ch.b, nb, 16, (n + 16 * nb - 1) / (16 * nb) * 16 + 16);
      copyBytes(static_cast<char*>(rv.buf) + pt.begin,
                static_cast<const char*>(sd.buf) + pt.begin, pt.count);
    }
  }
  for (uint32_t t = 0; t < a.maxRounds; ++t) {
    __syncthreads();  // the previous round's lanes have read seq[]
    if (tid() < p && tid() != me && t < a.peerRounds[tid()]) ch.seq[tid()] += 1;
    __syncthreads();
    for (int d = 1; d < p; ++d) {
      const int j = (me + d) % p;
      if (t >= a.peerRounds[j]) continue;
      const Chunk c = chunkOf(a, j, true, t);
      if (c.msg < 0) continue;
      if (!waitPeers(ch, L.offFree, 2, j)) return false;
      const Range pt = partOf(c.bytes, 0, ch.b, nb, 16, a.partCap);
      copyBytes(inboxAt(ch, j, me, ch.seq[j]),
                static_cast<const char*>(a.msgs[c.msg].buf) + c.off + pt.begin, pt.count);
      __syncthreads();
      signalPeers(ch, L.offPush, j);
    }
    for (int d = 1; d < p; ++d) {
      const int j = (me - d + p) % p;
      if (t >= a.peerRounds[j]) continue;
      const Chunk c = chunkOf(a, j, false, t);
      if (c.msg >= 0) {
        if (!waitPeers(ch, L.offPush, 0, j)) return false;
        const Range pt = partOf(c.bytes, 0, ch.b, nb, 16, a.partCap);
        copyBytes(static_cast<char*>(a.msgs[c.msg].buf) + c.off + pt.begin,
                  inboxAt(ch, me, j, ch.seq[j]), pt.count);
      }
      __syncthreads();
      signalPeers(ch, L.offFree, j);
    }
  }
  return true;
}

__device__ __forceinline__ void p2pKernelBody(const Ctx* g, const P2PArgs& a) {
  __shared__ Chan ch;
  const bool began = chanBegin(ch, g);
  // The call's agreement around the first exchange of a staged pipeline (kernel_common.cuh,
  // above agreeSlot): posted even by a channel that did not begin, compared after the rounds,
  // whose failures wait for the comparison.
  if (a.callAgree) agreePost(ch, a.desc);
  if (began) {
    if (a.callAgree) {
      if (tid() == 0) ch.deferFail = 1;
      __syncthreads();
    }
    const bool moved = (!a.agree || p2pAgree(ch, a)) && p2pRounds(ch, a);
    if (a.callAgree) {
      // still deferred: a lane's failed wait must not be published before another lane's
      // difference
      agreeCheck(ch, a.desc, kAgreeInStagedExchange, /*patient=*/moved);
      publishDeferred(ch);
    }
  }
  chanEnd(ch);
}

// Host side: lowers `least` (< 0: none yet) to the number of blocks of kThreads threads of
// `kernel` that one SM holds at once (0 when the query fails). The residency queries of
// kernels_exact.cu and kernels_codec.inc (launch.h) take the minimum over their kernels.
template <class K>
void leastResident(int& least, K kernel, int smemBytes = 0) {
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreads, smemBytes) != cudaSuccess)
    n = 0;
  least = least < 0 || n < least ? n : least;
}

// Abort: raises the poison value in every flag this rank would raise at its peers (skipping
// peers that already poisoned this rank: they may have freed their staging).
__device__ __forceinline__ void poisonKernelBody(const Ctx* g) {
  __shared__ Chan ch;
  chanBegin(ch, g);
  __syncthreads();
  // Raises the error word (kernels of this rank that start later stop in chanBegin) and, when
  // this is the rank's first failure, publishes it to the host like any other (asyncError then
  // refuses later calls: an abort of the staged pipeline's mover leaves the communicator broken,
  // never silently idle).
  if (tid() == 0) recordFailure(ch, ipc::WaitResult::Aborted, -1);
  chanEnd(ch, /*agreement=*/true);
}

}  // namespace dev
}  // namespace coccl
