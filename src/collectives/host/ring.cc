// Ring algorithms: one link per rank, p-1 hops per phase. Used at large world sizes (or with
// COCCL_ALGO=ring). Compressed reduce-scatter re-encodes the partial sum at every hop, so its
// error grows with the number of hops (measured in README "Ring vs two-shot"); the all-gather
// phase relays the owner's encoded bytes unchanged, so all ranks still decode identical bytes.
#include <memory>
#include <vector>

#include "collectives/host/host_executor.h"
#include "collectives/host/algorithms.h"
#include "collectives/host/reduce.h"
#include "core/error.h"

namespace coccl {
namespace {

constexpr uint64_t kChunkBits = 16;

uint64_t ringTag(uint64_t base, uint64_t phase, int step, size_t k) {
  // Messages of one (phase, step) between a pair of ranks match in order; k only disambiguates.
  return base | (phase << 23) | ((static_cast<uint64_t>(step) & 0x7f) << kChunkBits) |
         (static_cast<uint64_t>(k) & ((uint64_t{1} << kChunkBits) - 1));
}

int mod(int a, int p) { return ((a % p) + p) % p; }

struct Chunks {
  std::vector<PoolBuffer> buf;
  std::vector<const void*> ptr;  // bytes to forward (may point into the user's output)
  void reset(size_t n) {
    buf.clear();
    buf.resize(n);
    ptr.assign(n, nullptr);
  }
};

// The all-gather phase: fwd holds this rank's own segment's wire bytes per chunk.
void ringGatherPhase(HostExecutor& c, const Wire& w, char* out, const std::vector<Range>& segs,
                     size_t chunk, uint64_t tag, Chunks fwd, size_t& wireSent) {
  const int p = c.nranks(), me = c.rank(), next = (me + 1) % p, prev = mod(me - 1, p);
  const size_t es = w.elemSize();
  Transport& t = c.transport();
  Waiter& wt = c.waiter();
  for (int s = 0; s < p - 1; ++s) {
    int sendSeg = mod(me - s, p), recvSeg = mod(me - s - 1, p);
    size_t kr = numChunks(segs[recvSeg].count, chunk), ks = numChunks(segs[sendSeg].count, chunk);
    Chunks got;
    got.reset(kr);
    std::vector<RequestPtr> recvs(kr), sends;
    for (size_t k = 0; k < kr; ++k) {
      Range r = chunkOf(segs[recvSeg], chunk, k);
      size_t b = w.bytes(r.count);
      void* dst = out + r.begin * es;
      if (w.compressed()) {
        got.buf[k] = c.pool().get(b);
        dst = got.buf[k].data();
      }
      got.ptr[k] = dst;
      recvs[k] = t.irecv(prev, ringTag(tag, 1, s, k), dst, b);
    }
    for (size_t k = 0; k < ks; ++k) {
      Range r = chunkOf(segs[sendSeg], chunk, k);
      size_t b = w.bytes(r.count);
      sends.push_back(t.isend(next, ringTag(tag, 1, s, k), fwd.ptr[k], b));
      wireSent += b;
    }
    for (size_t k = 0; k < kr; ++k) {
      wt.wait(*recvs[k], "ring all-gather receive");
      if (w.compressed()) {
        Range r = chunkOf(segs[recvSeg], chunk, k);
        w.unpack(got.ptr[k], r.count, out + r.begin * es);
      }
    }
    wt.waitAll(sends, "ring all-gather sends");
    fwd = std::move(got);
  }
}

}  // namespace

void ringReduce(HostExecutor& c, const Wire& w, const char* in, char* out,
                const std::vector<Range>& segs, bool allReduce) {
  const int p = c.nranks(), me = c.rank(), next = (me + 1) % p, prev = mod(me - 1, p);
  const size_t es = w.elemSize();
  size_t total = 0;
  for (auto& s : segs) total += s.count;
  if (total == 0) return;
  const size_t chunk =
      chunkElemsFor(static_cast<size_t>(c.config().chunkBytes), es, w.align(), total);
  const uint64_t tag = c.nextCollectiveTag();
  Transport& t = c.transport();
  Waiter& wt = c.waiter();
  BufferPool& pool = c.pool();
  const cocclDataType_t dt = w.dtype();
  const cocclRedOp_t op = w.op();
  const cocclRedOp_t hopOp = op == cocclAvg ? cocclSum : op;
  size_t wireSent = 0;
  auto outPtr = [&](const Range& r) {
    return allReduce ? out + r.begin * es : out + (r.begin - segs[me].begin) * es;
  };
  std::unique_ptr<float[]> acc(w.compressed() ? new float[chunk] : nullptr);

  Chunks cur;  // what this rank sends at the current step
  {
    int seg0 = mod(me - 1, p);
    size_t k0 = numChunks(segs[seg0].count, chunk);
    cur.reset(k0);
    for (size_t k = 0; k < k0; ++k) {
      Range r = chunkOf(segs[seg0], chunk, k);
      if (w.compressed()) cur.buf[k] = pool.get(w.bytes(r.count));
      cur.ptr[k] = w.pack(in + r.begin * es, r.count, cur.buf[k].data());
    }
  }
  Chunks result;  // AllReduce: this rank's reduced segment on the wire
  if (p == 1) {
    size_t kn = numChunks(segs[0].count, chunk);
    result.reset(kn);
    for (size_t k = 0; k < kn; ++k) {
      Range r = chunkOf(segs[0], chunk, k);
      const void* ins[1] = {in + r.begin * es};
      if (!w.compressed()) {
        reduceArrays(outPtr(r), ins, 1, r.count, dt, op, 1);
        continue;
      }
      std::fill(acc.get(), acc.get() + r.count, 0.0f);
      w.accumulateRaw(in + r.begin * es, r.count, acc.get());
      if (allReduce) result.buf[k] = pool.get(w.bytes(r.count));
      w.finish(acc.get(), r.count, outPtr(r), allReduce ? result.buf[k].data() : nullptr);
    }
    return;
  }

  for (int s = 0; s < p - 1; ++s) {
    const bool last = s == p - 2;
    int sendSeg = mod(me - s - 1, p), recvSeg = mod(me - s - 2, p);
    size_t kr = numChunks(segs[recvSeg].count, chunk), ks = numChunks(segs[sendSeg].count, chunk);
    Chunks got, nxt;
    got.reset(kr);
    nxt.reset(kr);
    if (last && allReduce) result.reset(kr);
    std::vector<RequestPtr> recvs(kr), sends;
    for (size_t k = 0; k < kr; ++k) {
      Range r = chunkOf(segs[recvSeg], chunk, k);
      size_t b = w.bytes(r.count);
      got.buf[k] = pool.get(b);
      recvs[k] = t.irecv(prev, ringTag(tag, 0, s, k), got.buf[k].data(), b);
    }
    for (size_t k = 0; k < ks; ++k) {
      Range r = chunkOf(segs[sendSeg], chunk, k);
      size_t b = w.bytes(r.count);
      sends.push_back(t.isend(next, ringTag(tag, 0, s, k), cur.ptr[k], b));
      wireSent += b;
    }
    for (size_t k = 0; k < kr; ++k) {
      Range r = chunkOf(segs[recvSeg], chunk, k);
      const char* own = in + r.begin * es;
      wt.wait(*recvs[k], "ring reduce-scatter receive");
      size_t b = w.bytes(r.count);
      if (!w.compressed()) {
        const void* ins[2] = {got.buf[k].data(), own};
        if (last) {
          reduceArrays(outPtr(r), ins, 2, r.count, dt, op, p);
          if (allReduce) result.ptr[k] = outPtr(r);
        } else {
          nxt.buf[k] = pool.get(b);
          reduceArrays(nxt.buf[k].data(), ins, 2, r.count, dt, hopOp, p);
          nxt.ptr[k] = nxt.buf[k].data();
        }
      } else {
        w.accumulate(got.buf[k].data(), own, r.count, acc.get());
        if (last && allReduce) {
          result.buf[k] = pool.get(b);
          result.ptr[k] = w.finish(acc.get(), r.count, outPtr(r), result.buf[k].data());
        } else if (last) {
          w.finish(acc.get(), r.count, outPtr(r), nullptr);
        } else {
          nxt.buf[k] = pool.get(b);
          nxt.ptr[k] = w.packPartial(acc.get(), r.count, nxt.buf[k].data());
        }
      }
      got.buf[k].release();
    }
    wt.waitAll(sends, "ring reduce-scatter sends");
    cur = std::move(nxt);
  }
  if (allReduce) ringGatherPhase(c, w, out, segs, chunk, tag, std::move(result), wireSent);
  c.stats().wireBytesSent += wireSent;
}

void ringAllGather(HostExecutor& c, const Wire& w, const char* in, char* out, size_t count) {
  const int p = c.nranks(), me = c.rank();
  const size_t es = w.elemSize();
  const size_t chunk = chunkElems(static_cast<size_t>(c.config().chunkBytes), es, w.align());
  if (count == 0) return;
  const uint64_t tag = c.nextCollectiveTag();
  std::vector<Range> segs = equalShards(count, p);
  size_t kn = numChunks(count, chunk);
  Chunks own;
  own.reset(kn);
  for (size_t k = 0; k < kn; ++k) {
    Range r = chunkOf(segs[me], chunk, k);
    const char* src = in + (r.begin - segs[me].begin) * es;
    char* dst = out + r.begin * es;
    if (w.compressed()) {
      own.buf[k] = c.pool().get(w.bytes(r.count));
      own.ptr[k] = w.pack(src, r.count, own.buf[k].data());
      w.unpack(own.ptr[k], r.count, dst);  // decode our own bytes, like everyone else
    } else {
      w.unpack(src, r.count, dst);
      own.ptr[k] = dst;
    }
  }
  size_t wireSent = 0;
  ringGatherPhase(c, w, out, segs, chunk, tag, std::move(own), wireSent);
  c.stats().wireBytesSent += wireSent;
}

}  // namespace coccl
