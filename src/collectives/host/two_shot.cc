#include <memory>
#include <vector>

#include "collectives/host/agree_call.h"
#include "collectives/host/algorithms.h"
#include "collectives/host/host_executor.h"
#include "core/error.h"

namespace coccl {
namespace {

constexpr uint64_t kPhaseRS = 0;
constexpr uint64_t kPhaseAG = 1;
constexpr uint64_t kChunkMask = (uint64_t{1} << 23) - 1;

uint64_t subTag(uint64_t base, uint64_t phase, size_t k) {
  return base | (phase << 23) | (static_cast<uint64_t>(k) & kChunkMask);
}

// Per-chunk state of the pipeline. Slots are reused every kSlots chunks.
struct Slot {
  std::vector<PoolBuffer> rsIn;       // wire inputs for my shard, one per peer
  std::vector<RequestPtr> rsReq;
  std::vector<PoolBuffer> sendBuf;    // encoded pieces of my input, one per owner
  std::vector<RequestPtr> sendReq;
  PoolBuffer result;                  // encoded reduced chunk (compressed AllReduce)
  std::vector<RequestPtr> resultReq;  // its sends
  std::vector<PoolBuffer> agIn;       // owners' encoded results (compressed AllReduce)
  std::vector<RequestPtr> agReq;
  void resize(int p) {
    rsIn.resize(p);
    rsReq.resize(p);
    sendBuf.resize(p);
    sendReq.resize(p);
    resultReq.resize(p);
    agIn.resize(p);
    agReq.resize(p);
  }
};

constexpr size_t kDepth = 1;              // owner step runs kDepth chunks behind posting
constexpr size_t kSlots = 2 * kDepth + 2;  // posted, reducing, gathering, draining

}  // namespace

void twoShotReduce(HostExecutor& c, const Wire& w, const char* in, char* out,
                   const std::vector<Range>& shards, bool allReduce, CallAgreement& agree) {
  const int p = c.nranks(), me = c.rank();
  const size_t es = w.elemSize();
  size_t longest = 0;
  for (const Range& s : shards) longest = std::max(longest, s.count);
  const size_t chunk =
      pipelineChunkElems(static_cast<size_t>(c.config().chunkBytes), es, w.align(), longest);
  const size_t K = numChunks(longest, chunk);
  if (K == 0) {
    agree.start();
    agree.finish();
    return;
  }
  // Taken after the agreement (a call that fails it takes none: the ranks' tags stay in step).
  uint64_t tag = 0;
  Transport& t = c.transport();
  Waiter& wt = c.waiter();
  BufferPool& pool = c.pool();
  size_t wireSent = 0;
  auto outPtr = [&](int j, const Range& r) {
    return allReduce ? out + r.begin * es : out + (r.begin - shards[j].begin) * es;
  };

  std::vector<Slot> slots(kSlots);
  for (auto& s : slots) s.resize(p);
  std::unique_ptr<float[]> scratch(w.compressed() ? new float[chunk] : nullptr);

  auto waitSends = [&](Slot& s) {
    wt.waitAll(s.sendReq, "two-shot sends");
    wt.waitAll(s.resultReq, "two-shot result sends");
    for (auto& b : s.sendBuf) b.release();
    s.result.release();
  };

  // Bytes of chunk 0's piece for rank j sent with the agreement (0: sent by post(0)), on the
  // agreement's eager tag; mineEager: the peers sent this rank's chunk-0 pieces so.
  std::vector<uint32_t> eager(static_cast<size_t>(p), 0);
  bool mineEager = false;
  const uint64_t eagerTag = HostExecutor::agreeEagerTag();
  // Rank j's piece of chunk k of this rank's input (encoded when compressed).
  auto sendPiece = [&](size_t k, int j) {
    Slot& s = slots[k % kSlots];
    const Range r = chunkOf(shards[j], chunk, k);
    if (!r.count) return;
    const size_t b = w.bytes(r.count);
    if (w.compressed()) s.sendBuf[j] = pool.get(b);
    const void* bytes = w.pack(in + r.begin * es, r.count, s.sendBuf[j].data());
    const bool ahead = k == 0 && eager[static_cast<size_t>(j)];
    s.sendReq[j] = t.isend(j, ahead ? eagerTag : subTag(tag, kPhaseRS, k), bytes, b);
    wireSent += b;
  };

  auto post = [&](size_t k) {
    Slot& s = slots[k % kSlots];
    // A fresh slot has nothing to wait for (slot 0 may hold chunk 0's pieces sent with the
    // agreement, which stay in flight).
    if (k >= kSlots) waitSends(s);
    Range mine = chunkOf(shards[me], chunk, k);
    for (int j = 0; j < p; ++j) {
      if (j == me) continue;
      if (mine.count) {
        size_t b = w.bytes(mine.count);
        s.rsIn[j] = pool.get(b);
        s.rsReq[j] = t.irecv(j, k == 0 && mineEager ? eagerTag : subTag(tag, kPhaseRS, k),
                             s.rsIn[j].data(), b);
      }
      Range theirs = chunkOf(shards[j], chunk, k);
      if (allReduce && theirs.count) {
        size_t b = w.bytes(theirs.count);
        void* dst;
        if (w.compressed()) {
          s.agIn[j] = pool.get(b);
          dst = s.agIn[j].data();
        } else {
          dst = outPtr(j, theirs);  // exact: receive straight into the output
        }
        s.agReq[j] = t.irecv(j, subTag(tag, kPhaseAG, k), dst, b);
      }
    }
    for (int d = 1; d < p; ++d) {  // stagger destinations so owners are not hit all at once
      const int j = (me + d) % p;
      if (k == 0 && eager[static_cast<size_t>(j)]) continue;  // sent with the agreement
      sendPiece(k, j);
      wt.poll();
    }
  };

  auto ownerStep = [&](size_t k) {
    Slot& s = slots[k % kSlots];
    Range mine = chunkOf(shards[me], chunk, k);
    if (!mine.count) return;
    wt.waitAll(s.rsReq, "two-shot reduce-scatter receives");
    std::vector<const void*> ins(p, nullptr);
    for (int j = 0; j < p; ++j)
      if (j != me) ins[j] = s.rsIn[j].data();
    void* wireOut = nullptr;
    size_t b = w.bytes(mine.count);
    if (allReduce && w.compressed()) {
      s.result = pool.get(b);
      wireOut = s.result.data();
    }
    const void* fwd = w.ownerReduce(ins.data(), me, in + mine.begin * es, mine.count,
                                    outPtr(me, mine), wireOut, scratch.get());
    for (auto& buf : s.rsIn) buf.release();
    if (!allReduce) return;
    for (int d = 1; d < p; ++d) {
      int j = (me + d) % p;
      s.resultReq[j] = t.isend(j, subTag(tag, kPhaseAG, k), fwd, b);
      wireSent += b;
    }
  };

  auto gatherStep = [&](size_t k) {
    Slot& s = slots[k % kSlots];
    for (int j = 0; j < p; ++j) {
      if (j == me || !s.agReq[j]) continue;
      wt.wait(*s.agReq[j], "two-shot all-gather receives");
      s.agReq[j].reset();
      if (w.compressed()) {
        Range r = chunkOf(shards[j], chunk, k);
        w.unpack(s.agIn[j].data(), r.count, outPtr(j, r));
        s.agIn[j].release();
      }
    }
  };

  // The agreement, with chunk 0's small reduce-scatter pieces right behind the descriptors
  // (agree_call.h): they wait at the owners until the check passed and post(0) receives them.
  // Every rank computes the same pieces (once the check passed), so sender and receiver pick
  // the same tag.
  auto eagerBytes = [&](int j) -> uint32_t {
    const Range r = chunkOf(shards[j], chunk, 0);
    const size_t b = r.count ? w.bytes(r.count) : 0;
    return b && b <= kAgreeEagerBytes ? static_cast<uint32_t>(b) : 0;
  };
  for (int j = 0; j < p; ++j)
    if (j != me) eager[static_cast<size_t>(j)] = eagerBytes(j);
  mineEager = eagerBytes(me) != 0;
  agree.start(eager);
  for (int d = 1; d < p; ++d) {
    const int j = (me + d) % p;
    if (eager[static_cast<size_t>(j)]) sendPiece(0, j);
  }
  agree.finish(&slots[0].sendReq);
  tag = c.nextCollectiveTag();

  for (size_t step = 0; step < K + 2 * kDepth; ++step) {
    if (step < K) post(step);
    if (step >= kDepth && step - kDepth < K) ownerStep(step - kDepth);
    if (allReduce && step >= 2 * kDepth && step - 2 * kDepth < K) gatherStep(step - 2 * kDepth);
  }
  for (auto& s : slots) waitSends(s);
  c.stats().wireBytesSent += wireSent;
}

void directAllGather(HostExecutor& c, const Wire& w, const char* in, char* out, size_t count) {
  const int p = c.nranks(), me = c.rank();
  const size_t es = w.elemSize();
  const size_t chunk =
      pipelineChunkElems(static_cast<size_t>(c.config().chunkBytes), es, w.align(), count);
  const size_t K = numChunks(count, chunk);
  if (K == 0) return;
  const uint64_t tag = c.nextCollectiveTag();
  Transport& t = c.transport();
  Waiter& wt = c.waiter();
  BufferPool& pool = c.pool();
  const Range whole{0, count};
  size_t wireSent = 0;
  char* myOut = out + static_cast<size_t>(me) * count * es;
  const bool inPlace = in == myOut;

  // Two chunks in flight: chunk k is posted before chunk k-1 is waited for and decoded.
  struct AgSlot {
    std::vector<PoolBuffer> inBuf;
    std::vector<RequestPtr> reqs;
    PoolBuffer enc;
  };
  AgSlot slots[2];
  auto post = [&](size_t k) {
    AgSlot& s = slots[k % 2];
    Range r = chunkOf(whole, chunk, k);
    size_t b = w.bytes(r.count);
    s.inBuf.resize(p);
    s.reqs.clear();
    for (int j = 0; j < p; ++j) {
      if (j == me) continue;
      char* dst = out + (static_cast<size_t>(j) * count + r.begin) * es;
      if (w.compressed()) {
        s.inBuf[j] = pool.get(b);
        dst = s.inBuf[j].as<char>();
      }
      s.reqs.push_back(t.irecv(j, subTag(tag, kPhaseAG, k), dst, b));
    }
    if (w.compressed()) s.enc = pool.get(b);
    const void* bytes = w.pack(in + r.begin * es, r.count, s.enc.data());
    for (int d = 1; d < p; ++d) {
      int j = (me + d) % p;
      s.reqs.push_back(t.isend(j, subTag(tag, kPhaseAG, k), bytes, b));
      wireSent += b;
    }
    // Own shard: decode our own bytes (compressed: identical to what the others decode).
    if (w.compressed())
      w.unpack(bytes, r.count, myOut + r.begin * es);
    else if (!inPlace)
      w.unpack(in + r.begin * es, r.count, myOut + r.begin * es);
  };
  auto finish = [&](size_t k) {
    AgSlot& s = slots[k % 2];
    Range r = chunkOf(whole, chunk, k);
    wt.waitAll(s.reqs, "all-gather transfers");
    s.reqs.clear();
    s.enc.release();
    if (!w.compressed()) return;
    for (int j = 0; j < p; ++j) {
      if (j == me) continue;
      w.unpack(s.inBuf[j].data(), r.count, out + (static_cast<size_t>(j) * count + r.begin) * es);
      s.inBuf[j].release();
    }
  };
  for (size_t k = 0; k < K; ++k) {
    post(k);
    if (k > 0) finish(k - 1);
  }
  finish(K - 1);
  c.stats().wireBytesSent += wireSent;
}

}  // namespace coccl
