// Broadcast and Reduce (exact, never compressed).
#include <cstring>
#include <vector>

#include "collectives/host/host_executor.h"
#include "collectives/host/algorithms.h"
#include "collectives/host/reduce.h"

namespace coccl {
namespace {
constexpr int kDirectMaxRanks = 4;
uint64_t chunkTag(uint64_t base, size_t k) { return base | (static_cast<uint64_t>(k) & 0x7fffff); }
}  // namespace

void broadcast(HostExecutor& c, const char* in, char* out, size_t bytes, int root) {
  const int p = c.nranks(), me = c.rank();
  if (bytes == 0) return;
  const uint64_t tag = c.nextCollectiveTag();
  Transport& t = c.transport();
  Waiter& wt = c.waiter();
  if (me == root && in != out) std::memcpy(out, in, bytes);
  if (p == 1) return;
  const size_t chunk = static_cast<size_t>(c.config().chunkBytes);
  const size_t K = numChunks(bytes, chunk);
  std::vector<RequestPtr> reqs;
  if (p <= kDirectMaxRanks) {
    // Direct: the root sends every chunk to every rank.
    for (size_t k = 0; k < K; ++k) {
      size_t b = std::min(chunk, bytes - k * chunk);
      if (me == root) {
        for (int d = 1; d < p; ++d)
          reqs.push_back(t.isend((root + d) % p, chunkTag(tag, k), out + k * chunk, b));
      } else {
        reqs.push_back(t.irecv(root, chunkTag(tag, k), out + k * chunk, b));
      }
    }
    wt.waitAll(reqs, "broadcast transfers");
    return;
  }
  // Pipelined chain root -> root+1 -> ... : each rank forwards chunk k once it has it.
  const int pos = (me - root + p) % p;
  const int next = pos == p - 1 ? -1 : (me + 1) % p;
  const int prev = (me - 1 + p) % p;
  std::vector<RequestPtr> recvs(K);
  if (pos != 0)
    for (size_t k = 0; k < K; ++k)
      recvs[k] = t.irecv(prev, chunkTag(tag, k), out + k * chunk,
                         std::min(chunk, bytes - k * chunk));
  for (size_t k = 0; k < K; ++k) {
    size_t b = std::min(chunk, bytes - k * chunk);
    if (pos != 0) wt.wait(*recvs[k], "broadcast chain receive");
    if (next >= 0) reqs.push_back(t.isend(next, chunkTag(tag, k), out + k * chunk, b));
  }
  wt.waitAll(reqs, "broadcast chain sends");
}

void reduceToRoot(HostExecutor& c, const char* in, char* out, size_t count, cocclDataType_t dt,
                  cocclRedOp_t op, int root) {
  const int p = c.nranks(), me = c.rank();
  if (count == 0) return;
  const size_t es = dtypeSize(dt);
  const uint64_t tag = c.nextCollectiveTag();
  Transport& t = c.transport();
  Waiter& wt = c.waiter();
  const size_t chunk = chunkElems(static_cast<size_t>(c.config().chunkBytes), es, 1);
  const size_t K = numChunks(count, chunk);
  if (me != root) {
    std::vector<RequestPtr> reqs;
    for (size_t k = 0; k < K; ++k) {
      size_t n = std::min(chunk, count - k * chunk);
      reqs.push_back(t.isend(root, chunkTag(tag, k), in + k * chunk * es, n * es));
    }
    wt.waitAll(reqs, "reduce sends");
    return;
  }
  // Root: two chunks in flight; inputs combined in rank order.
  std::vector<PoolBuffer> bufs[2];
  std::vector<RequestPtr> reqs[2];
  for (int i = 0; i < 2; ++i) {
    bufs[i].resize(p);
    reqs[i].resize(p);
  }
  auto post = [&](size_t k) {
    size_t n = std::min(chunk, count - k * chunk);
    for (int r = 0; r < p; ++r) {
      if (r == me) continue;
      bufs[k % 2][r] = c.pool().get(n * es);
      reqs[k % 2][r] = t.irecv(r, chunkTag(tag, k), bufs[k % 2][r].data(), n * es);
    }
  };
  post(0);
  for (size_t k = 0; k < K; ++k) {
    if (k + 1 < K) post(k + 1);
    size_t n = std::min(chunk, count - k * chunk);
    wt.waitAll(reqs[k % 2], "reduce receives");
    std::vector<const void*> ins(p);
    for (int r = 0; r < p; ++r)
      ins[r] = r == me ? static_cast<const void*>(in + k * chunk * es) : bufs[k % 2][r].data();
    reduceArrays(out + k * chunk * es, ins.data(), p, n, dt, op, p);
    for (auto& b : bufs[k % 2]) b.release();
  }
}

}  // namespace coccl
