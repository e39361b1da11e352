// Exact (uncompressed) collective kernels, Send/Recv and the abort kernel.
#include "collectives/device/kernels.cuh"
#include "collectives/device/launch.h"

namespace coccl {
namespace dev {
namespace {

__global__ void __launch_bounds__(kThreads, 1) reduceExactKernel(const Ctx* g, const ReduceArgs a) {
  reduceKernelBody<ExactMode>(g, a);
}

__global__ void __launch_bounds__(kThreads, 1) gatherExactKernel(const Ctx* g, const GatherArgs a) {
  gatherKernelBody<ExactMode>(g, a);
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

__device__ Chunk chunkOf(const P2PArgs& a, int peer, bool send, uint64_t t) {
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

__device__ bool p2pRounds(Chan& ch, const P2PArgs& a) {
  const int p = ch.c.nranks, me = ch.c.rank, nb = ch.c.nblocks;
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

__global__ void __launch_bounds__(kThreads, 1) p2pKernel(const Ctx* g, const P2PArgs a) {
  __shared__ Chan ch;
  if (chanBegin(ch, g)) {
    p2pRounds(ch, a);
  }
  chanEnd(ch);
}

__global__ void __launch_bounds__(kThreads, 1) poisonKernel(const Ctx* g) {
  __shared__ Chan ch;
  chanBegin(ch, g);
  __syncthreads();
  if (tid() == 0) ch.failed = 1;
  chanEnd(ch);
}

}  // namespace

cudaError_t launchReduceExact(const Ctx* ctx, const ReduceArgs& a, int nblocks, cudaStream_t s) {
  reduceExactKernel<<<nblocks, kThreads, 0, s>>>(ctx, a);
  return cudaGetLastError();
}

cudaError_t launchGatherExact(const Ctx* ctx, const GatherArgs& a, int nblocks, cudaStream_t s) {
  gatherExactKernel<<<nblocks, kThreads, 0, s>>>(ctx, a);
  return cudaGetLastError();
}

cudaError_t launchP2P(const Ctx* ctx, const P2PArgs& a, int nblocks, cudaStream_t s) {
  p2pKernel<<<nblocks, kThreads, 0, s>>>(ctx, a);
  return cudaGetLastError();
}

cudaError_t launchPoison(const Ctx* ctx, int nblocks, cudaStream_t s) {
  poisonKernel<<<nblocks, 1 * 32, 0, s>>>(ctx);
  return cudaGetLastError();
}

}  // namespace dev
}  // namespace coccl
