// Device-side building blocks of the collective kernels: the channel state of a thread block
// (its round numbers with every peer), flag waits and signals over the CUDA IPC regions, byte
// copies, and failure handling. See dev_types.h for the region layout and cuda_ipc_executor.cc for
// the protocol.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "collectives/cuda_ipc/dev_types.h"
#include "transport/cuda_ipc/device_flags.cuh"

namespace coccl {
namespace dev {

// Per-block state, in shared memory.
struct Chan {
  Ctx c;                    // copy of the communicator context
  uint64_t seq[kMaxRanks];  // current round with each peer (pair-wise numbering)
  uint64_t cseq;            // current collective round (outbox parity)
  uint64_t agreeN;          // this call's agreement number on the channel (agreePost)
  int failed;               // uniform after each __syncthreads
  int b;                    // block index = channel
  // deferFail: a wait's failure is kept here (pendCode, pendPeer) instead of being published,
  // so that a call-descriptor difference found after it (agreeCheck) is what the host reports.
  int deferFail;
  uint32_t pendCode;
  int pendPeer;
  uint64_t callId;  // the call descriptor's hash word this kernel carries (0: none)
  // COCCL_PHASE_TIMES (Ctx::phases set): lane 0's clock (phaseStart / phaseMark / phaseEnd)
  uint64_t phStart, phLast;
  uint64_t ph[kPhases];
};

__device__ __forceinline__ int tid() { return static_cast<int>(threadIdx.x); }

__device__ __forceinline__ uint64_t* flagAt(const Chan& ch, int owner, uint64_t off, int peer) {
  return reinterpret_cast<uint64_t*>(ch.c.base[owner] + off) +
         static_cast<uint64_t>(peer) * static_cast<uint64_t>(ch.c.nblocks) +
         static_cast<uint64_t>(ch.b);
}

// Inbox sub-slot of `owner` that `writer` fills, for the round `seq` of that pair.
__device__ __forceinline__ uint8_t* inboxAt(const Chan& ch, int owner, int writer, uint64_t seq) {
  const int p = ch.c.nranks;
  const uint64_t d = static_cast<uint64_t>((writer - owner - 1 + p) % p);
  const uint64_t par = seq & 1u;
  const uint64_t nb = static_cast<uint64_t>(ch.c.nblocks);
  return reinterpret_cast<uint8_t*>(ch.c.base[owner] + ch.c.lay.offInbox) +
         ((par * static_cast<uint64_t>(p - 1) + d) * nb + static_cast<uint64_t>(ch.b)) *
             ch.c.lay.sub;
}

__device__ __forceinline__ uint8_t* outboxAt(const Chan& ch, int owner) {
  const uint64_t par = ch.cseq & 1u;
  return reinterpret_cast<uint8_t*>(ch.c.base[owner] + ch.c.lay.offOutbox) +
         (par * static_cast<uint64_t>(ch.c.nblocks) + static_cast<uint64_t>(ch.b)) * ch.c.lay.sub;
}

// Records a failure (first one wins in the host-visible state) and marks the block failed.
// peer -1: no peer (the abort's poison kernel).
// With ch.deferFail the failure is only kept in the channel (publishDeferred publishes it).
__device__ __forceinline__ void publishFailure(Chan& ch, uint32_t code, int peer) {
  uint32_t* first = reinterpret_cast<uint32_t*>(ch.c.base[ch.c.rank] + ch.c.lay.offErr);
  if (atomicCAS(first, 0u, code) == 0u) {
    HostState* h = ch.c.host;
    h->errPeer = peer;
    h->errBlock = ch.b;
    h->errCall = ch.callId;
    __threadfence_system();
    *reinterpret_cast<volatile uint32_t*>(&h->error) = code;
    __threadfence_system();
  }
  atomicExch(&ch.failed, 1);  // several lanes may fail at once
}

__device__ __forceinline__ void recordFailure(Chan& ch, ipc::WaitResult r, int peer) {
  const uint32_t code = r == ipc::WaitResult::Timeout   ? kDevTimeout
                        : r == ipc::WaitResult::Aborted ? kDevAborted
                                                        : kDevPeerFailed;
  if (ch.deferFail) {
    if (atomicCAS(&ch.pendCode, 0u, code) == 0u) ch.pendPeer = peer;
    atomicExch(&ch.failed, 1);
    return;
  }
  publishFailure(ch, code, peer);
}

// Ends a deferral: publishes the failure kept since it began, if any (after a descriptor
// difference recorded meanwhile, which then stays the rank's first failure).
__device__ __forceinline__ void publishDeferred(Chan& ch) {
  __syncthreads();
  if (tid() == 0) {
    ch.deferFail = 0;
    if (ch.pendCode) publishFailure(ch, ch.pendCode, ch.pendPeer);
  }
  __syncthreads();
}

// Waits for the flag of `peer` in this rank's memory to reach `seq - delta` (no wait when
// seq <= delta).
// (A poisoned flag fails even when no wait is needed: the peer is gone and its memory with it.)
__device__ __forceinline__ void waitFlag(Chan& ch, uint64_t off, int peer, uint64_t delta) {
  const uint64_t s = ch.seq[peer];
#if defined(COCCL_DEVICE_EMULATION) && defined(COCCL_EMU_TRACE)
  if (coccl_emu_trace_on)
    std::fprintf(stderr, "rank %d block %d lane %d: wait off %llu peer %d >= %llu (now %llu)\n",
                 ch.c.rank, ch.b, tid(), (unsigned long long)off, peer,
                 (unsigned long long)(s > delta ? s - delta : 0),
                 (unsigned long long)*flagAt(ch, ch.c.rank, off, peer));
#endif
  const ipc::WaitResult r =
      ipc::waitAtLeast(flagAt(ch, ch.c.rank, off, peer), s > delta ? s - delta : 0,
                       ch.c.timeoutNs, &ch.c.host->abort,
                       reinterpret_cast<const uint32_t*>(ch.c.base[ch.c.rank] + ch.c.lay.offErr),
                       kPoison);
  if (r != ipc::WaitResult::Ok) {
#if defined(COCCL_DEVICE_EMULATION) && defined(COCCL_EMU_TRACE)
    std::fprintf(stderr, "rank %d block %d: wait off %llu peer %d target %llu value %llu -> %d\n",
                 ch.c.rank, ch.b, (unsigned long long)off, peer,
                 (unsigned long long)(s > delta ? s - delta : 0),
                 (unsigned long long)*flagAt(ch, ch.c.rank, off, peer), (int)r);
#endif
    recordFailure(ch, r, peer);
  }
}

// Every peer (or only `only` when >= 0): waits in parallel, one lane per peer. Starts and ends
// with a barrier; returns false when the block failed.
__device__ __forceinline__ bool waitPeers(Chan& ch, uint64_t off, uint64_t delta, int only = -1) {
  const int p = ch.c.nranks, me = ch.c.rank;
  // Every lane's earlier stores and signals are issued before any lane spins: no reliance on
  // the scheduling of diverged lanes of a warp (a waiting lane may share a warp with a lane that
  // still has to raise a flag the peers need).
  __syncthreads();
  if (tid() < p - 1) {
    const int q = (me + 1 + tid()) % p;
    if (only < 0 || q == only) waitFlag(ch, off, q, delta);
  }
  __syncthreads();
  return !ch.failed;
}

// After a barrier that ended the writes being published: one lane per peer stores this rank's
// round number into that peer's flag `off` (only peer `only` when >= 0). One release store at
// system scope (a fence and the store in one instruction), no separate fence before it: the
// barrier orders the block's writes before the store (causality order is transitive through
// bar.sync), and the release makes all of them visible to a peer whose acquire load reads the
// flag. (NCCL's proxy-free posts use the same pattern: one
// acq_rel fence at system scope, then the store.)
__device__ __forceinline__ void signalPeers(Chan& ch, uint64_t off, int only = -1) {
  const int p = ch.c.nranks, me = ch.c.rank;
  if (tid() < p - 1) {
    const int q = (me + 1 + tid()) % p;
    if (only < 0 || q == only) {
#if defined(COCCL_DEVICE_EMULATION) && defined(COCCL_EMU_TRACE)
      if (coccl_emu_trace_on)
        std::fprintf(stderr, "rank %d block %d lane %d: signal off %llu -> rank %d = %llu\n",
                     me, ch.b, tid(), (unsigned long long)off, q, (unsigned long long)ch.seq[q]);
#endif
      ipc::stReleaseSys(flagAt(ch, q, off, me), ch.seq[q]);
    }
  }
}

// Loads the context and this channel's round numbers; false if the communicator already failed
// or was aborted (the kernel then only poisons its flags). Only device memory is read here: the
// error word of this rank's region, which the abort's poison kernel raises too. The host's abort
// word (host-mapped memory, a PCIe round trip of about a microsecond) is read by the waits, every
// 64 polls; a kernel that started between the abort and the poison kernel fails at its first
// wait that does not complete at once (the peers' flags are poisoned), or completes a collective
// that every peer ran too.
__device__ __forceinline__ bool chanBegin(Chan& ch, const Ctx* g) {
  {
    const uint32_t* src = reinterpret_cast<const uint32_t*>(g);
    uint32_t* dst = reinterpret_cast<uint32_t*>(&ch.c);
    for (int i = tid(); i < static_cast<int>(sizeof(Ctx) / 4); i += blockDim.x) dst[i] = src[i];
  }
  if (tid() == 0) {
    ch.failed = 0;
    ch.deferFail = 0;
    ch.pendCode = 0;
    ch.pendPeer = -1;
    ch.callId = 0;
    ch.b = static_cast<int>(blockIdx.x);
  }
  __syncthreads();
  const int p = ch.c.nranks;
  const char* mine = ch.c.base[ch.c.rank];
  if (tid() < p)
    ch.seq[tid()] = reinterpret_cast<const uint64_t*>(mine + ch.c.lay.offSeq)
        [static_cast<uint64_t>(tid()) * static_cast<uint64_t>(ch.c.nblocks) + ch.b];
  if (tid() == 0) {
    ch.cseq = reinterpret_cast<const uint64_t*>(mine + ch.c.lay.offCseq)[ch.b];
    if (*reinterpret_cast<const volatile uint32_t*>(mine + ch.c.lay.offErr)) ch.failed = 1;
  }
  __syncthreads();
  return !ch.failed;
}

// ---- phase times (COCCL_PHASE_TIMES; dev_types.h PhaseWord) ----------------------------------
// Lane 0 reads %globaltimer at each phase's end, after a barrier (so the block's work of the
// phase is done; the barrier is there only while timing), and adds the time since the last mark
// to ch.ph[slot]; phaseEnd adds them, the block's whole time and its rounds to the block's
// counters in Ctx::phases (device memory: no host round trip in the kernel). Off (Ctx::phases
// null): one uniform test of shared memory at each mark.
__device__ __forceinline__ void phaseStart(Chan& ch) {
  if (ch.c.phases && tid() == 0) {
    ch.phStart = ch.phLast = ipc::globalTimerNs();
    for (int i = 0; i < kPhases; ++i) ch.ph[i] = 0;
  }
}

__device__ __forceinline__ void phaseMark(Chan& ch, int slot) {
  if (!ch.c.phases) return;
  __syncthreads();
  if (tid() == 0) {
    const uint64_t t = ipc::globalTimerNs();
    ch.ph[slot] += t - ch.phLast;
    ch.phLast = t;
  }
}

// After the rounds; a block that failed adds nothing.
__device__ __forceinline__ void phaseEnd(Chan& ch, uint32_t rounds) {
  if (!ch.c.phases) return;
  __syncthreads();
  if (tid() == 0 && !ch.failed) {
    uint64_t* o = ch.c.phases + static_cast<uint64_t>(ch.b) * kPhaseWords;
    for (int i = 0; i < kPhTotal; ++i) o[i] += ch.ph[i];
    o[kPhTotal] += ipc::globalTimerNs() - ch.phStart;
    o[kPhRuns] += 1;
    o[kPhRounds] += rounds;
  }
}

// ---- per-call agreement (collectives/call_desc.h) -----------------------------------------
// Before any data of a collective moves, block b of every rank writes the call's descriptor
// into every peer's agree[n & 1][me][b] and raises that peer's agreeFlag[me][b] = n, where n is
// the channel's agreement number (agreeCnt[b] + 1: the collective calls that used channel b,
// equal on every rank while calls agree); then it waits for every peer's flag on channel b and
// compares the peer's descriptor, word by word, with its own. A difference records kDevMismatch
// (both descriptors go to the host state for the message) and fails the block, which then
// touches no data. Every rank holds every peer's descriptor, so every rank fails. A channel
// that the other side does not run (the number of blocks follows the count) is released by the
// error word that this rank's block 0 (channel 0 runs in every call) raised.
// The staged codec pipeline's first exchange splits the two halves (agreePost at its start,
// agreeCheck at its end, p2pKernelBody): its data rounds move encoded pieces between staging
// buffers only, so they need not wait for the comparison, and the agreement costs no round trip
// of its own. A difference in the count can make the ranks' numbers of rounds differ: the rank
// that finishes first finds the difference, fails and poisons its peers' data flags; a peer
// that sees the poison (its failure deferred, Chan::deferFail) compares the descriptor that rank
// posted at its start and reports the difference too.
// Slot reuse: the writer of use n+2 of a channel (same parity as n) has waited, in use n+1, for
// the reader's flag of use n+1, which the reader raised after its kernel of use n (and its read
// of that slot, at that kernel's start or end) had ended: calls on a communicator are
// stream-ordered.
__device__ __forceinline__ uint64_t* agreeSlot(const Chan& ch, int owner, uint64_t n, int writer) {
  const uint64_t p = static_cast<uint64_t>(ch.c.nranks), nb = static_cast<uint64_t>(ch.c.nblocks);
  return reinterpret_cast<uint64_t*>(ch.c.base[owner] + ch.c.lay.offAgree) +
         (((n & 1u) * p + static_cast<uint64_t>(writer)) * nb + static_cast<uint64_t>(ch.b)) * 16;
}

// Records a descriptor difference with `peer` (first failure of the rank wins); `from`: where a
// call descriptor was compared (AgreeFrom).
__device__ __forceinline__ void recordMismatch(Chan& ch, int peer, const AgreeDesc& mine,
                                               const uint64_t* theirs,
                                               uint32_t from = kAgreeInCollective) {
  uint32_t* first = reinterpret_cast<uint32_t*>(ch.c.base[ch.c.rank] + ch.c.lay.offErr);
  if (atomicCAS(first, 0u, static_cast<uint32_t>(kDevMismatch)) == 0u) {
    HostState* h = ch.c.host;
    for (int i = 0; i < 16; ++i) {
      h->mine.w[i] = mine.w[i];
      h->theirs.w[i] = theirs[i];
    }
    h->errPeer = peer;
    h->errBlock = ch.b;
    h->errFrom = from;
    h->errCall = ch.callId;
    __threadfence_system();
    *reinterpret_cast<volatile uint32_t*>(&h->error) = static_cast<uint32_t>(kDevMismatch);
    __threadfence_system();
  }
  atomicExch(&ch.failed, 1);
}

// The first half of a call's agreement on this channel: the descriptor into every peer's slot
// (16 words each), then one lane per peer raises that peer's flag. No wait. Also run by a
// channel that failed in chanBegin (another channel of this rank failed, maybe on this very
// call's descriptors): its peers' deferred checks need the descriptor; a peer that poisoned
// this rank (it failed or aborted, and may have freed its region) is skipped.
__device__ __forceinline__ void agreePost(Chan& ch, const AgreeDesc& d) {
  __shared__ uint32_t gone;  // bit q: skip peer q
  const int p = ch.c.nranks, me = ch.c.rank;
  if (tid() == 0) {
    ch.agreeN = reinterpret_cast<const uint64_t*>(ch.c.base[me] + ch.c.lay.offAgreeCnt)[ch.b] + 1;
    ch.callId = d.w[kCallIdWord];
    gone = 0;
    // A failed channel posts only for the call whose kernel failed (another channel of this
    // launch): an earlier call's failure left the agreement number where it was, and this
    // later call's post would overwrite the slot of that number that peers may still read.
    // The failure's call is written (host-mapped) before `error`; wait for `error` briefly
    // (the failing block is between its error word and its host state).
    if (ch.failed) {
      const volatile HostState* h = ch.c.host;
      unsigned ns = 32;
      for (int i = 0; i < 4096 && h->error == 0u; ++i) ipc::backoff(ns);
      __threadfence_system();
      if (h->error == 0u || h->errCall != ch.callId) gone = ~0u;
    }
  }
  __syncthreads();
  if (ch.failed && tid() < p && tid() != me) {
    const uint64_t offs[3] = {ch.c.lay.offPush, ch.c.lay.offPull, ch.c.lay.offFree};
    for (uint64_t off : offs)
      if (ipc::ldAcquireSys(flagAt(ch, me, off, tid())) == kPoison) atomicOr(&gone, 1u << tid());
  }
  __syncthreads();
  if (p > 1) {
    for (int i = tid(); i < (p - 1) * 16; i += static_cast<int>(blockDim.x)) {
      const int q = (me + 1 + i / 16) % p;
      if (!(gone >> q & 1u)) agreeSlot(ch, q, ch.agreeN, me)[i % 16] = d.w[i % 16];
    }
    __syncthreads();
    if (tid() < p - 1) {
      const int q = (me + 1 + tid()) % p;
      if (!(gone >> q & 1u)) ipc::stReleaseSys(flagAt(ch, q, ch.c.lay.offAgreeFlag, me), ch.agreeN);
    }
  }
  __syncthreads();
}

// After a failed data round: waits for peer q's descriptor of use n on this channel; false
// when q's channel gave up first (it poisoned one of this rank's data flags: q failed before
// its agreePost, or is gone), on an abort, or at the timeout. A channel of q that failed only
// because another of q's channels did (its error word) posted its descriptor at its start.
__device__ __forceinline__ bool peerPosted(Chan& ch, int q, uint64_t n) {
  const uint64_t* flag = flagAt(ch, ch.c.rank, ch.c.lay.offAgreeFlag, q);
  const volatile uint32_t* errWord =
      reinterpret_cast<const uint32_t*>(ch.c.base[ch.c.rank] + ch.c.lay.offErr);
  const uint64_t t0 = ipc::globalTimerNs();
  unsigned ns = 32;
  for (unsigned polls = 0;; ++polls) {
    const uint64_t v = ipc::ldAcquireSys(flag);
    if (v >= n) return v != kPoison;
    // The rounds already waited the whole timeout (a peer that neither posts nor poisons):
    // no second one.
    if (ch.pendCode == kDevTimeout) return false;
    const uint64_t offs[3] = {ch.c.lay.offPush, ch.c.lay.offPull, ch.c.lay.offFree};
    for (uint64_t off : offs)
      if (ipc::ldAcquireSys(flagAt(ch, ch.c.rank, off, q)) == kPoison) {
        const uint64_t w = ipc::ldAcquireSys(flag);  // posted before it poisoned?
        return w >= n && w != kPoison;
      }
    // Another channel of this rank published a failure (a difference it found, or one of its
    // own): this rank's report is decided, and that channel's peers may never post on this
    // one (a fused kernel of fewer blocks): stop.
    if ((polls & 63u) == 63u &&
        (*errWord || ch.c.host->abort || ipc::globalTimerNs() - t0 > ch.c.timeoutNs))
      return false;
    ipc::backoff(ns);
  }
}

// The second half: compares every peer's descriptor with `d`; false when the block failed (a
// difference, a timeout, an abort). `patient`: waits for each peer's flag up to the timeout;
// otherwise (after a failed wait of the data rounds, the failure deferred) waits only while the
// peer's channel may still post it (peerPosted), so that a peer that stopped because the
// descriptors differ, or whose other channel did, is reported as the difference rather than
// as a failed peer. `from`: recorded with a difference (AgreeFrom).
__device__ __forceinline__ bool agreeCheck(Chan& ch, const AgreeDesc& d, uint32_t from,
                                           bool patient) {
  const int p = ch.c.nranks, me = ch.c.rank;
  const uint64_t n = ch.agreeN;
  __syncthreads();
  if (p > 1 && tid() < p - 1) {
    const int q = (me + 1 + tid()) % p;
    uint64_t* flag = flagAt(ch, me, ch.c.lay.offAgreeFlag, q);
    bool there;
    if (patient) {
      const ipc::WaitResult r = ipc::waitAtLeast(
          flag, n, ch.c.timeoutNs, &ch.c.host->abort,
          reinterpret_cast<const uint32_t*>(ch.c.base[me] + ch.c.lay.offErr), kPoison);
      there = r == ipc::WaitResult::Ok;
      if (!there) recordFailure(ch, r, q);
    } else {
      there = peerPosted(ch, q, n);
    }
    if (there) {
      const volatile uint64_t* theirs = agreeSlot(ch, me, n, q);
      uint64_t w[16];
      bool same = true;
      for (int i = 0; i < 16; ++i) {
        w[i] = theirs[i];
        same = same && w[i] == d.w[i];
      }
      if (!same) recordMismatch(ch, q, d, w, from);
    }
  }
  __syncthreads();
  if (tid() == 0 && !ch.failed)
    reinterpret_cast<uint64_t*>(ch.c.base[me] + ch.c.lay.offAgreeCnt)[ch.b] = n;
  __syncthreads();
  return !ch.failed;
}

// The agreement of one collective call on this channel before any of its data moves (the
// fused kernels); false when the block failed. Call right after chanBegin.
__device__ __forceinline__ bool agreeCall(Chan& ch, const AgreeDesc& d,
                                          uint32_t from = kAgreeInCollective) {
  agreePost(ch, d);
  return agreeCheck(ch, d, from, /*patient=*/true);
}

// Next round with every peer and, for collectives, the next collective round.
__device__ __forceinline__ void nextRound(Chan& ch, bool collective) {
  __syncthreads();  // the previous round's lanes have read seq[]
  if (tid() < ch.c.nranks) ch.seq[tid()] += 1;
  if (collective && tid() == 0) ch.cseq += 1;
  __syncthreads();
}

// Writes the round numbers back (the next kernel, or graph replay, continues from them). On
// failure, poisons every flag this channel would raise at its peers so they stop waiting: the
// data rounds' flags, and with `agreement` (the abort's poison kernel: this rank will run no
// more agreements) the call-agreement flags too, which release a peer waiting in agreeCall for
// a call this rank never reaches (a staged call's first exchange after this rank's pipeline
// failed before it). Other failures leave those alone: a rank that found a difference has
// raised its own agreement flag, and its peers, comparing its descriptor, record the
// difference themselves (a poisoned flag would give them only kDevPeerFailed).
__device__ __forceinline__ void chanEnd(Chan& ch, bool agreement = false) {
  __syncthreads();
  const int p = ch.c.nranks, me = ch.c.rank;
  char* mine = ch.c.base[me];
  if (ch.failed) {
    if (tid() < p && tid() != me) {
      const uint64_t offs[4] = {ch.c.lay.offPush, ch.c.lay.offPull, ch.c.lay.offFree,
                                ch.c.lay.offAgreeFlag};
      const int n = agreement ? 4 : 3;
      // A peer that poisoned us has failed or aborted and may have freed its region: skip it.
      bool gone = false;
      for (int i = 0; i < 3; ++i) gone = gone || ipc::ldAcquireSys(flagAt(ch, me, offs[i], tid())) == kPoison;
      if (!gone)
        for (int i = 0; i < n; ++i) ipc::stReleaseSys(flagAt(ch, tid(), offs[i], me), kPoison);
    }
    return;
  }
  if (tid() < p)
    reinterpret_cast<uint64_t*>(mine + ch.c.lay.offSeq)
        [static_cast<uint64_t>(tid()) * static_cast<uint64_t>(ch.c.nblocks) + ch.b] =
            ch.seq[tid()];
  if (tid() == 0) reinterpret_cast<uint64_t*>(mine + ch.c.lay.offCseq)[ch.b] = ch.cseq;
}

// ---- partitioning ---------------------------------------------------------------------------

struct Range {
  uint64_t begin;
  uint64_t count;
};

// Part `b` of round `k` of a shard of `n` elements: round k covers [k*R, (k+1)*R) with
// R = nb * partCap; that piece is split over the nb blocks in whole units (balanced).
__device__ __forceinline__ Range partOf(uint64_t n, uint64_t k, int b, int nb, uint64_t unit,
                                        uint64_t partCap) {
  const uint64_t R = static_cast<uint64_t>(nb) * partCap;
  const uint64_t rb = k * R;
  if (rb >= n) return {n, 0};
  const uint64_t m = n - rb < R ? n - rb : R;
  const uint64_t units = (m + unit - 1) / unit;
  uint64_t lo = units * static_cast<uint64_t>(b) / static_cast<uint64_t>(nb) * unit;
  uint64_t hi = units * static_cast<uint64_t>(b + 1) / static_cast<uint64_t>(nb) * unit;
  lo = lo < m ? lo : m;
  hi = hi < m ? hi : m;
  return {rb + lo, hi - lo};
}

// Shard j of n elements over p ranks with boundaries at multiples of `unit` (balancedShards of
// src/collectives/layout.h).
__device__ __forceinline__ Range balancedShard(uint64_t n, int p, int j, uint64_t unit) {
  const uint64_t units = (n + unit - 1) / unit;
  uint64_t b = units * static_cast<uint64_t>(j) / static_cast<uint64_t>(p) * unit;
  uint64_t e = units * static_cast<uint64_t>(j + 1) / static_cast<uint64_t>(p) * unit;
  b = b < n ? b : n;
  e = e < n ? e : n;
  return {b, e - b};
}

// ---- copies -----------------------------------------------------------------------------------

// Block-wide copy of n bytes; 16-byte accesses when both pointers allow, else the widest that
// does. Non-overlapping (or identical: then nothing to do).
__device__ __forceinline__ void copyBytes(void* dst, const void* src, uint64_t n) {
  if (n == 0 || dst == src) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  const uint64_t t = static_cast<uint64_t>(tid()), nt = blockDim.x;
  uint64_t done = 0;
  if ((a & 15u) == 0) {
    const uint64_t nv = n / 16;
    const uint4* s = static_cast<const uint4*>(src);
    uint4* d = static_cast<uint4*>(dst);
    uint64_t i = t;
    for (; i + 3 * nt < nv; i += 4 * nt) {  // four loads in flight per thread
      uint4 v0 = s[i], v1 = s[i + nt], v2 = s[i + 2 * nt], v3 = s[i + 3 * nt];
      d[i] = v0;
      d[i + nt] = v1;
      d[i + 2 * nt] = v2;
      d[i + 3 * nt] = v3;
    }
    for (; i < nv; i += nt) d[i] = s[i];
    done = nv * 16;
  } else if ((a & 7u) == 0) {
    const uint64_t nv = n / 8;
    const uint2* s = static_cast<const uint2*>(src);
    uint2* d = static_cast<uint2*>(dst);
    for (uint64_t i = t; i < nv; i += nt) d[i] = s[i];
    done = nv * 8;
  } else if ((a & 3u) == 0) {
    const uint64_t nv = n / 4;
    const uint32_t* s = static_cast<const uint32_t*>(src);
    uint32_t* d = static_cast<uint32_t*>(dst);
    for (uint64_t i = t; i < nv; i += nt) d[i] = s[i];
    done = nv * 4;
  } else if ((a & 1u) == 0) {
    const uint64_t nv = n / 2;
    const uint16_t* s = static_cast<const uint16_t*>(src);
    uint16_t* d = static_cast<uint16_t*>(dst);
    for (uint64_t i = t; i < nv; i += nt) d[i] = s[i];
    done = nv * 2;
  }
  const uint8_t* s = static_cast<const uint8_t*>(src);
  uint8_t* d = static_cast<uint8_t*>(dst);
  for (uint64_t i = done + t; i < n; i += nt) d[i] = s[i];
}

}  // namespace dev
}  // namespace coccl
