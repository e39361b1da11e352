// The staged codec pipeline's state and stage helpers (staged_codec.h), shared by its
// collectives: staged_codec.cc (AllReduce, two-shot and one-shot), staged_direct.cc
// (ReduceScatter, AllGather) and staged_hier.cc (the two-level ones). The pipeline is written
// down at the top of staged_codec.cc.
// Private to src/collectives/staged.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "codecs/codec.h"
#include "collectives/call_desc.h"
#include "collectives/layout.h"
#include "collectives/staged/staged_codec.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/device_codec.h"
#include "mem/cuda_check.h"
#include "mem/device_scratch.h"

namespace coccl {

struct StagedCodec::Impl {
  static constexpr int kSets = 2;
  // Every slot has this many bytes in front of it: where the call's descriptor travels in
  // front of the first exchange's payloads on a mover that carriesInHeads() (DescHeads).
  static constexpr size_t kHead = sizeof(CallDesc);
  enum Slot { kSend = 0, kRecv = 1, kRed = 2, kGath = 3 };  // per set: send[p] recv[p] red gath[p]

  int p, me;
  size_t slotBytes;
  ByteMover& mover;
  bool oneShot = false;  // AllReduce: one-shot instead of two-shot (StagedAllReduce)
  std::string arName, directName;  // CollStats::algorithm
  cudaStream_t side = nullptr;
  cudaEvent_t ev[4][kSets] = {};  // per stage boundary and set
  char* staging = nullptr;
  float* acc = nullptr;  // ReduceScatter's fp32 sum of one piece (4 * slotBytes)
  // The end of the last compressed call issued outside a stream capture: the next one, on
  // whatever stream, starts after it (the staging is the communicator's, not the stream's).
  cudaEvent_t tail = nullptr;
  bool tailSet = false;
  // The running call's agreement (StagedCodec::run's `agree`), carried by its first exchange:
  // as the exchange's `agree` (agreePending), or in heads in front of its payloads (`headed`:
  // the mover carriesInHeads(), the call not two-level), in stages: Stored by run3 / run5 on
  // the internal stream before the first piece is encoded; Posted with the first exchange;
  // Compared once the next stage's event is recorded (beside that stage, before the next
  // piece's exchange on the internal stream, a one-block kernel); joined to the caller's stream
  // (None again) before set 0 is rewritten (a headed gather's heads lie where later pieces'
  // payloads go) or else at the end of the call.
  enum class HeadsStage { None, Stored, Posted, Compared };
  bool agreePending = false;
  bool headed = false;
  HeadsStage headsStage = HeadsStage::None;
  DescHeads storedHeads;
  cudaEvent_t startEv = nullptr, joinEv = nullptr;
  CallDesc pendingDesc{};
  std::vector<const void*> ins;  // the p payload pointers of one reduction step (host side)
  std::vector<ByteMover::Xfer> group;  // one exchange (host side)
  DeviceScratch ws;  // the codec's device workspace (grows without waiting for the device)
  // Two-level calls (staged_hier.cc): ranks per node (1: none), the host's chunk, whether the
  // pieces overlap (two_level.h), their staging (grows, as ws), CollStats::algorithm.
  int ranksPerNode = 1;
  size_t hierChunkBytes = 0;
  bool hierPipelined = false;
  DeviceScratch hierStaging;
  std::string hierName;

  Impl(int nranks, int rank, size_t slot, ByteMover& mv)
      : p(nranks), me(rank), slotBytes(slot), mover(mv), ins(static_cast<size_t>(nranks)) {}
  // The owner destroys its transport first (NCCL: ncclCommDestroy / abort), so nothing of
  // ours is still being moved; cudaFree waits for this device's kernels.
  ~Impl() {  // also after a constructor that failed half-way
    for (auto& row : ev)
      for (cudaEvent_t& e : row)
        if (e) COCCL_CUDA_WARN(cudaEventDestroy(e));
    for (cudaEvent_t e : {tail, startEv, joinEv})
      if (e) COCCL_CUDA_WARN(cudaEventDestroy(e));
    if (side) COCCL_CUDA_WARN(cudaStreamDestroy(side));
    if (staging) COCCL_CUDA_WARN(cudaFree(staging));
    if (acc) COCCL_CUDA_WARN(cudaFree(acc));
    ws.release();
    hierStaging.release();
  }

  // Runs one compressed pipeline on s: ordered after the previous eager call, joined and the
  // transport aborted (peers get an error instead of waiting forever) when anything fails half-way.
  void pipeline(cudaStream_t s, const std::function<void()>& body) {
    const bool eager = !streamCapturing(s);
    if (eager && tailSet) COCCL_CUDA_CHECK(cudaStreamWaitEvent(s, tail, 0));
    try {
      body();
    } catch (...) {
      if (cudaEventRecord(ev[3][0], side) == cudaSuccess) (void)cudaStreamWaitEvent(s, ev[3][0], 0);
      (void)cudaGetLastError();
      mover.abort();
      throw;
    }
    if (eager) {
      COCCL_CUDA_CHECK(cudaEventRecord(tail, s));
      tailSet = true;
    }
  }

  char* slot(size_t k, Slot kind, int j) const {
    const size_t per = 3 * static_cast<size_t>(p) + 1;
    const size_t base = (k % kSets) * per;
    const size_t idx = kind == kSend   ? static_cast<size_t>(j)
                       : kind == kRecv ? static_cast<size_t>(p + j)
                       : kind == kRed  ? 2 * static_cast<size_t>(p)
                                       : 2 * static_cast<size_t>(p) + 1 + static_cast<size_t>(j);
    return staging + (base + idx) * slotStride() + kHead;
  }
  // Slots and heads 128-byte aligned whatever COCCL_CHUNK_BYTES is (slotBytes rounded up to
  // 256, plus the head).
  size_t slotStride() const { return (slotBytes + 255) / 256 * 256 + kHead; }
  static size_t stagingSlots(int nranks) { return kSets * (3 * static_cast<size_t>(nranks) + 1); }
  // Elements of one piece: the most whole codec blocks whose payload fits a slot (at least
  // one block). The same on every rank (a function of the codec, dt and the agreed slot size).
  size_t pieceElems(const Codec& c, cocclDataType_t dt) const {
    const size_t g = c.blockElems();
    const size_t limit = (size_t{1} << 40) / g;
    size_t lo = 1;  // encodedBytes(lo g) fits (or lo = 1), encodedBytes(hi g) does not
    while (lo < limit && c.encodedBytes(2 * lo * g, dt) <= slotBytes) lo *= 2;
    size_t hi = 2 * lo;
    while (lo + 1 < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      (c.encodedBytes(mid * g, dt) <= slotBytes ? lo : hi) = mid;
    }
    // ReduceScatter's fp32 accumulator holds slotBytes elements (codecs under 1 byte per
    // element would fit more).
    return std::min(lo, std::max<size_t>(1, slotBytes / g)) * g;
  }
  // The pieces of `count` elements (a shard, or the whole message): as many as pieces of at
  // most `piece` elements need, all of one size (whole blocks of g) but the last, so that no
  // piece is a tiny tail that pays a whole exchange's fixed cost. At most `piece`.
  static size_t evenPiece(size_t count, size_t piece, size_t g) {
    const size_t K = numChunks(count, piece);
    if (K <= 1) return piece;
    const size_t e = (count + K - 1) / K;
    return std::min(piece, (e + g - 1) / g * g);
  }
  // Gather stages over the mover's allGather: every rank's payload of piece k at
  // slot(k, kGath, 0) + j * stride, stride = the largest payload of the piece rounded up to
  // 256 bytes (aligned payloads for the vector paths of the codec kernels), at most a slot
  // stride less its head (a payload is at most slotBytes).
  static size_t gatherStride(size_t largestPayload) { return (largestPayload + 255) / 256 * 256; }
  // Device workspace of the codec's operations on one piece (plug-ins may ask for some; the
  // built-ins need none). Grows, never during a stream capture.
  void* workspace(const Codec& c, cocclDataType_t dt, size_t piece, cudaStream_t s) {
    return grown(ws, c.deviceWorkspaceBytes(piece, dt, p), "codec ", c.name(), "device workspace",
                 s);
  }
  // `buf` grown to `need` bytes (null when 0); a growth during a stream capture is refused,
  // naming who (`whoPrefix` `who`) needs what.
  static void* grown(DeviceScratch& buf, size_t need, const char* whoPrefix, const char* who,
                     const char* what, cudaStream_t s) {
    if (need == 0) return nullptr;
    if (!buf.fits(need))
      COCCL_CHECK_USAGE(!streamCapturing(s),
                        "%s%s needs %zu bytes of %s: run the collective once outside the CUDA "
                        "graph capture first", whoPrefix, who, need, what);
    return buf.grow(need);
  }
  // One exchange of piece k with every peer j, on the internal stream: send sendBytes(j)
  // bytes from `from(j)`, receive recvBytes(j) bytes into slot (k, into, j); zero sizes are
  // skipped (both ends skip the same ones: the sizes follow from the shared shards). The
  // call's first exchange carries its descriptor: where the heads are Stored, in the kHead
  // bytes in front of every transfer (none skipped then).
  template <class From, class SendBytes, class RecvBytes>
  void exchange(size_t k, From from, SendBytes sendBytes, Slot into, RecvBytes recvBytes) {
    group.clear();
    if (headsStage == HeadsStage::Stored) {
      const DescHeads& h = storedHeads;
      for (int j = 0; j < p; ++j) {
        if (j == me) continue;
        const size_t uj = static_cast<size_t>(j);
        COCCL_CHECK_INTERNAL(from(j) == h.send + kHead + uj * h.sendStride &&
                                 slot(k, into, j) == h.recv + kHead + uj * h.recvStride,
                             "staged pipeline: an exchange's payloads are not behind its heads");
        group.push_back({from(j) - kHead, sendBytes(j) + kHead, j, true});
        group.push_back({slot(k, into, j) - kHead, recvBytes(j) + kHead, j, false});
      }
      headsStage = HeadsStage::Posted;
      mover.exchange(group, nullptr, side);
      return;
    }
    for (int j = 0; j < p; ++j) {
      if (j == me) continue;
      if (const size_t b = sendBytes(j)) group.push_back({from(j), b, j, true});
      if (const size_t b = recvBytes(j)) group.push_back({slot(k, into, j), b, j, false});
    }
    move(group, side);
  }
  // The group on stream s; the call's first one carries its agreement.
  void move(const std::vector<ByteMover::Xfer>& g, cudaStream_t s) {
    const bool agree = agreePending;
    agreePending = false;
    mover.exchange(g, agree ? &pendingDesc : nullptr, s);
  }
  // The heads of piece 0's exchange into slots `into` (from send[j]); of its gather with
  // stride `stride` (gatherStrideOf(0, ...)).
  DescHeads exchangeHeads(Slot into) const {
    return {slot(0, kSend, 0) - kHead, slotStride(), slot(0, into, 0) - kHead, slotStride()};
  }
  DescHeads gatherHeads(size_t stride) const {  // (a mover that carriesInHeads has an allGather)
    char* all = gathered(0, 0, stride) - kHead;
    return {all + static_cast<size_t>(me) * stride, 0, all, stride};
  }
  // run3 / run5: the heads stored on the internal stream, after what s holds so far (the
  // previous call's readers of the staging; in a capture, the fork into the internal stream).
  void storeHeads(cudaStream_t s, const DescHeads* h) {
    if (!h) return;
    COCCL_CUDA_CHECK(cudaEventRecord(startEv, s));
    COCCL_CUDA_CHECK(cudaStreamWaitEvent(side, startEv, 0));
    storedHeads = *h;
    mover.storeHeads(pendingDesc, *h, side);
    headsStage = HeadsStage::Stored;
  }
  // After the first exchange and the event the next stage waits for: the comparison.
  void compareHeads() {
    if (headsStage != HeadsStage::Posted) return;
    mover.compareHeads(side);
    COCCL_CUDA_CHECK(cudaEventRecord(joinEv, side));
    headsStage = HeadsStage::Compared;
  }
  void joinHeads(cudaStream_t s) {
    if (headsStage != HeadsStage::Compared) return;
    COCCL_CUDA_CHECK(cudaStreamWaitEvent(s, joinEv, 0));
    headsStage = HeadsStage::None;
  }
  // The gather of piece k (AllGather, one-shot AllReduce): every rank's payload of `bytes`
  // bytes on every rank. Rank j's payload lies at gathered(k, j): with the mover's allGather in
  // the gath slots of set k % 2 read as one buffer, `stride` (gatherStrideOf(k, bytes)) apart;
  // else mine in send[me] and the peers' in recv[j]. Where it is the call's first exchange and
  // `headed`, each payload has the call's descriptor in the kHead bytes before it, the stride
  // kHead longer (the gath slots' heads make room: at most p slot strides from the first head).
  char* gathered(size_t k, int j, size_t stride) const {
    if (mover.hasAllGather()) return slot(k, kGath, 0) + static_cast<size_t>(j) * stride;
    return j == me ? slot(k, kSend, me) : slot(k, kRecv, j);
  }
  bool headedGather(size_t k) const { return k == 0 && headed; }
  size_t gatherStrideOf(size_t k, size_t bytes) const {
    return gatherStride(bytes) + (headedGather(k) ? kHead : 0);
  }
  void gather(size_t k, size_t bytes, size_t stride) {
    if (mover.hasAllGather()) {
      if (headsStage == HeadsStage::Stored) {
        char* all = gathered(k, 0, stride) - kHead;
        COCCL_CHECK_INTERNAL(
            headedGather(k) && storedHeads.recv == all && storedHeads.recvStride == stride,
            "staged pipeline: a gather's payloads are not behind its heads");
        headsStage = HeadsStage::Posted;
        mover.allGather(all + static_cast<size_t>(me) * stride, all, stride, side);
        return;
      }
      mover.allGather(gathered(k, me, stride), gathered(k, 0, stride), stride, side);
      return;
    }
    auto each = [&](int) { return bytes; };
    exchange(k, [&](int) { return gathered(k, me, stride); }, each, kRecv, each);
  }
  // Bytes gather(k, bytes, gatherStride(bytes)) sends: the padded stride to each peer through
  // the allGather, else the payload.
  size_t gatherWireBytes(size_t bytes) const {
    const size_t b = mover.hasAllGather() ? gatherStride(bytes) : bytes;
    return static_cast<size_t>(p - 1) * b;
  }
  // The shape of a direct ReduceScatter / AllGather of r.count elements per rank: pieces,
  // stream, workspace; fills the statistics.
  struct Direct {
    size_t count, es, piece, K;
    cudaStream_t s;
    void* ws;
    size_t n(size_t k) const { return std::min(piece, count - k * piece); }
  };
  Direct direct(const CollRequest& r, CollStats& stats);
  void allReduce(const CollRequest& r, CollStats& stats);
  void oneShotAllReduce(const CollRequest& r, CollStats& stats);
  void reduceScatter(const CollRequest& r, CollStats& stats);
  void allGather(const CollRequest& r, CollStats& stats);
  void hierReduce(const CollRequest& r, CollStats& stats);  // staged_hier.cc

  cudaStream_t user(cocclStream_t s) const { return reinterpret_cast<cudaStream_t>(s); }
  // `to` waits for everything issued so far on `from` (event of stage boundary `b`, set k).
  void link(cudaStream_t from, cudaStream_t to, int b, size_t k) {
    cudaEvent_t e = ev[b][k % kSets];
    COCCL_CUDA_CHECK(cudaEventRecord(e, from));
    COCCL_CUDA_CHECK(cudaStreamWaitEvent(to, e, 0));
  }

  // Three stages: a(k) on S, x(k) on C, b(k) on S (see the top of this file). `heads`: where
  // x(0) carries the call's descriptor (null: nowhere).
  void run3(size_t K, cudaStream_t s, const std::function<void(size_t)>& a,
            const std::function<void(size_t)>& x, const std::function<void(size_t)>& b,
            const DescHeads* heads) {
    storeHeads(s, heads);
    auto first = [&](size_t k) {
      if (k == kSets) joinHeads(s);  // set 0 rewritten: a gather's heads lie in its payloads
      a(k);
      link(s, side, 0, k);
      x(k);
      COCCL_CUDA_CHECK(cudaEventRecord(ev[1][k % kSets], side));  // S waits for it before b(k)
      compareHeads();
    };
    first(0);
    for (size_t k = 0; k < K; ++k) {
      if (k + 1 < K) first(k + 1);
      COCCL_CUDA_CHECK(cudaStreamWaitEvent(s, ev[1][k % kSets], 0));
      b(k);
    }
    joinHeads(s);
  }

  // Five stages of the two-shot AllReduce; `heads` as for run3 (x1(0)'s).
  void run5(size_t K, cudaStream_t s, const std::function<void(size_t)>& enc,
            const std::function<void(size_t)>& x1, const std::function<void(size_t)>& red,
            const std::function<void(size_t)>& x2, const std::function<void(size_t)>& dec,
            const DescHeads* heads) {
    storeHeads(s, heads);
    auto first = [&](size_t k) {
      if (k == kSets) joinHeads(s);  // (as in run3)
      enc(k);
      link(s, side, 0, k);
      x1(k);
      COCCL_CUDA_CHECK(cudaEventRecord(ev[1][k % kSets], side));
      compareHeads();
    };
    first(0);
    for (size_t k = 0; k < K; ++k) {
      if (k + 1 < K) first(k + 1);
      COCCL_CUDA_CHECK(cudaStreamWaitEvent(s, ev[1][k % kSets], 0));
      red(k);
      link(s, side, 2, k);
      x2(k);
      COCCL_CUDA_CHECK(cudaEventRecord(ev[3][k % kSets], side));
      if (k > 0) {
        COCCL_CUDA_CHECK(cudaStreamWaitEvent(s, ev[3][(k - 1) % kSets], 0));
        dec(k - 1);
      }
    }
    COCCL_CUDA_CHECK(cudaStreamWaitEvent(s, ev[3][(K - 1) % kSets], 0));
    dec(K - 1);
    joinHeads(s);
  }
};

}  // namespace coccl
