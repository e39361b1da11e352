// The collective kernels' round loops (see device_comm.cc for the protocol). One grid of
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

#include "collectives/device/codec_ops.cuh"
#include "collectives/device/exact_reduce.cuh"
#include "collectives/device/kernel_common.cuh"

namespace coccl {
namespace dev {

// ---- data movement policies -----------------------------------------------------------------

template <class Tag>
struct CodecMode {
  using T = typename Tag::T;
  __device__ static void push(const ReduceArgs& a, const char* src, uint64_t n, uint8_t* dst) {
    encodePart<Tag>(a.codec, reinterpret_cast<const T*>(src), n, dst);
  }
  __device__ static void own(const ReduceArgs& a, const uint8_t* const* ins, int p, int self,
                             uint64_t n, char* userOut, uint8_t* outbox) {
    reducePart<Tag>(a.codec, ins, p, self, reinterpret_cast<const T*>(ins[self]), n, a.scale,
                    outbox, reinterpret_cast<T*>(userOut));
  }
  __device__ static void pull(const ReduceArgs& a, const uint8_t* src, uint64_t n, char* dst) {
    decodePart<Tag>(a.codec, src, n, reinterpret_cast<T*>(dst));
  }
  // Gather family: encode own part into the outbox and decode it into the own output slot.
  __device__ static void produce(const GatherArgs& a, const char* src, uint64_t n, uint8_t* ob,
                                 char* dst) {
    encodePart<Tag>(a.codec, reinterpret_cast<const T*>(src), n, ob);
    __syncthreads();
    decodePart<Tag>(a.codec, ob, n, reinterpret_cast<T*>(dst));
  }
  __device__ static void consume(const GatherArgs& a, const uint8_t* src, uint64_t n, char* dst) {
    decodePart<Tag>(a.codec, src, n, reinterpret_cast<T*>(dst));
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
  const int p = ch.c.nranks, me = ch.c.rank, nb = ch.c.nblocks;
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
      const Range sh = shardOf(j);
      const Range pt = partOf(sh.count, k, ch.b, nb, a.unit, a.partCap);
      M::push(a, in + (sh.begin + pt.begin) * es, pt.count, inboxAt(ch, j, me, ch.seq[j]));
      __syncthreads();
      signalPeers(ch, L.offPush, j);
    }
    // 2. owner: decode-reduce-(re-encode) of the p inputs of its shard
    if (!red || me == a.root) {
      if (!waitPeers(ch, L.offPush, 0)) return false;
      if (ar && !waitPeers(ch, L.offFree, 2)) return false;
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
    }
    // 3. AllReduce: every owner's result part, decoded from the same bytes on every rank
    if (ar) {
      for (int d = 1; d < p; ++d) {
        const int j = (me + d) % p;
        if (!waitPeers(ch, L.offPull, 0, j)) return false;
        const Range sh = shardOf(j);
        const Range pt = partOf(sh.count, k, ch.b, nb, a.unit, a.partCap);
        M::pull(a, outboxAt(ch, j), pt.count, out + (sh.begin + pt.begin) * es);
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
    reduceRounds<M>(ch, a, ins);  // on failure ch.failed is set
  }
  chanEnd(ch);
}

// ---- gather family ------------------------------------------------------------------------------

template <class M>
__device__ bool gatherRounds(Chan& ch, const GatherArgs& a) {
  const int p = ch.c.nranks, me = ch.c.rank, nb = ch.c.nblocks;
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
      M::produce(a, in + pt.begin * es, pt.count, outboxAt(ch, me),
                 out + (slot(me) + pt.begin) * es);
      __syncthreads();
      signalPeers(ch, L.offPull);
    }
    for (int d = 1; d < p; ++d) {
      const int j = (me + d) % p;
      if (bc && j != a.root) continue;
      if (!waitPeers(ch, L.offPull, 0, j)) return false;
      M::consume(a, outboxAt(ch, j), pt.count, out + (slot(j) + pt.begin) * es);
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
    gatherRounds<M>(ch, a);
  }
  chanEnd(ch);
}

}  // namespace dev
}  // namespace coccl
