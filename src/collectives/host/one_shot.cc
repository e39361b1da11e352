// One-shot compressed AllReduce on host buffers (algorithms.h).
//
// Chunk k of the input is encoded once and sent to every peer; every rank then sums the p
// payloads of chunk k, its own encoded bytes included, in rank order in fp32 (from +0), scales
// for AVG and rounds to the output type. Every rank decodes the same bytes in the same order,
// so the outputs are bitwise identical; the staged device pipeline (collectives/staged/) sums in
// the same order and gets the same bits. Two chunks are in flight: chunk k+1 is encoded and
// posted before chunk k is waited for and reduced (in place is safe: chunk k of the input was
// encoded before chunk k of the output is written).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "collectives/host/algorithms.h"
#include "collectives/host/host_executor.h"
#include "core/error.h"

namespace coccl {
namespace {

constexpr uint64_t kChunkMask = (uint64_t{1} << 23) - 1;

struct OneShotSlot {
  std::vector<PoolBuffer> in;  // the peers' payloads of the chunk (in[me] unused)
  PoolBuffer enc;              // this rank's payload
  std::vector<RequestPtr> reqs;  // declared last: destroyed (cancelled) before the buffers
};

}  // namespace

void oneShotAllReduce(HostExecutor& c, const Wire& w, const char* in, char* out, size_t count) {
  COCCL_CHECK_INTERNAL(w.compressed(), "one-shot AllReduce: exact wires take two-shot or ring");
  const int p = c.nranks(), me = c.rank();
  const size_t es = w.elemSize();
  const size_t chunk =
      chunkElemsFor(static_cast<size_t>(c.config().chunkBytes), es, w.align(), count);
  const size_t K = numChunks(count, chunk);
  if (K == 0) return;
  const uint64_t tag = c.nextCollectiveTag();
  Transport& t = c.transport();
  Waiter& wt = c.waiter();
  BufferPool& pool = c.pool();
  const Range whole{0, count};
  const Codec& codec = *w.codec();
  size_t wireSent = 0;
  std::unique_ptr<float[]> acc(new float[chunk]);
  std::vector<const void*> ins(static_cast<size_t>(p));
  OneShotSlot slots[2];

  auto post = [&](size_t k) {
    OneShotSlot& s = slots[k % 2];
    const Range r = chunkOf(whole, chunk, k);
    const size_t b = w.bytes(r.count);
    const uint64_t kt = tag | (static_cast<uint64_t>(k) & kChunkMask);
    s.in.resize(static_cast<size_t>(p));
    s.reqs.clear();
    for (int j = 0; j < p; ++j) {
      if (j == me) continue;
      s.in[j] = pool.get(b);
      s.reqs.push_back(t.irecv(j, kt, s.in[j].data(), b));
    }
    s.enc = pool.get(b);
    w.pack(in + r.begin * es, r.count, s.enc.data());
    for (int d = 1; d < p; ++d) {  // staggered destinations
      s.reqs.push_back(t.isend((me + d) % p, kt, s.enc.data(), b));
      wireSent += b;
    }
  };
  auto reduce = [&](size_t k) {
    OneShotSlot& s = slots[k % 2];
    const Range r = chunkOf(whole, chunk, k);
    wt.waitAll(s.reqs, "one-shot all-reduce transfers");
    s.reqs.clear();
    for (int j = 0; j < p; ++j)
      ins[static_cast<size_t>(j)] = j == me ? s.enc.data() : s.in[j].data();
    std::memset(acc.get(), 0, r.count * sizeof(float));
    for (int j = 0; j < p; j += 64)  // at most 64 payloads a call (codec.h)
      codec.decodeAccumulateMany(ins.data() + j, std::min(64, p - j), r.count, w.dtype(),
                                 acc.get());
    w.finish(acc.get(), r.count, out + r.begin * es, nullptr);
    s.enc.release();
    for (PoolBuffer& b : s.in) b.release();
  };
  for (size_t k = 0; k < K; ++k) {
    post(k);
    if (k > 0) reduce(k - 1);
  }
  reduce(K - 1);
  c.stats().wireBytesSent += wireSent;
}

}  // namespace coccl
