// Two-level (hierarchical) reduce-scatter and all-reduce on host buffers (algorithms.h),
// SDP4Bit's scheme (Jia et al., "SDP4Bit", NeurIPS 2024, section 3.2): inside a node the intra
// codec (e.g. int8), between nodes the inter codec (e.g. int4), each level quantised once.
//
// Ranks r = n L + l (node n of N, local rank l of L = CommContext::ranksPerNode()). Every
// message is cut into p shards (shard r is rank r's); every shard into chunks, processed one
// after another. For chunk k of the shards:
//   1. intra reduce-scatter: rank (n, l) encodes, for every local peer l', the N shards
//      (m, l') (m = 0..N-1) with the intra codec and sends them in one message to (n, l'); it
//      receives the payloads of its own column (m, l) from every local peer and forms, per m,
//      acc_m = sum over l' = 0..L-1 in order of (l' == l ? its raw input : decode(payload)).
//   2. inter reduce-scatter (the level boundary, one decode-reduce-encode): for every node
//      m != n, acc_m is encoded with the inter codec (fp32 input) and sent to (m, l); the owner
//      sums in node order m = 0..N-1 (m == n ? acc_n : decode(payload)), scales for AVG.
//      ReduceScatter: the sum, rounded to the output type, is rank (n, l)'s shard.
//   3. all-reduce only: the owner encodes the sum once (inter codec, fp32 input) and sends it
//      to (m, l) for every m != n; then every rank sends the N payloads of its column
//      (m, l), m = 0..N-1, in one message to each local peer. Every rank decodes all p
//      payloads: each shard is decoded from the same bytes everywhere, so every rank's output
//      is bitwise identical.
// Wire bytes per rank and chunk: (L-1) N intra payloads + (N-1) inter payloads, and for
// AllReduce (N-1) + (L-1) N inter payloads more.
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/host/algorithms.h"
#include "collectives/host/host_executor.h"
#include "collectives/host/reduce.h"
#include "core/error.h"

namespace coccl {
namespace {

constexpr uint64_t kIntraRS = 0, kInterRS = 1, kInterAG = 2, kIntraAG = 3;

uint64_t subTag(uint64_t base, uint64_t phase, size_t k) {
  return base | (phase << 22) | (static_cast<uint64_t>(k) & ((uint64_t{1} << 22) - 1));
}

}  // namespace

void hierReduce(HostExecutor& c, const Codec& intra, const Codec& inter, cocclDataType_t dt,
                cocclRedOp_t op, const char* in, char* out, const std::vector<Range>& shards,
                bool allReduce, int L) {
  const int p = c.nranks(), me = c.rank();
  COCCL_CHECK_ARG(L >= 1 && p % L == 0, "hierarchical: %d ranks per node for %d ranks", L, p);
  const int N = p / L, n0 = me / L, l0 = me % L;
  auto rankOf = [&](int n, int l) { return n * L + l; };
  const size_t es = dtypeSize(dt);
  const size_t align = std::max(intra.blockElems(), inter.blockElems());
  const size_t chunk = chunkElems(static_cast<size_t>(c.config().chunkBytes), es, align);
  size_t K = 0;
  for (const Range& s : shards) K = std::max(K, numChunks(s.count, chunk));
  if (K == 0) return;
  const uint64_t tag = c.nextCollectiveTag();
  Transport& t = c.transport();
  Waiter& wt = c.waiter();
  BufferPool& pool = c.pool();
  const float scale = op == cocclAvg ? 1.0f / static_cast<float>(p) : 1.0f;
  size_t wireSent = 0;
  auto outAt = [&](int r, const Range& piece) {
    return allReduce ? out + piece.begin * es : out + (piece.begin - shards[r].begin) * es;
  };
  std::vector<std::vector<float>> acc(static_cast<size_t>(N));  // acc_m of my column
  std::vector<float> total;

  for (size_t k = 0; k < K; ++k) {
    auto piece = [&](int r) { return chunkOf(shards[static_cast<size_t>(r)], chunk, k); };
    auto intraBytes = [&](int r) { return intra.encodedBytes(piece(r).count, dt); };
    auto interBytes = [&](int r) { return inter.encodedBytes(piece(r).count, cocclFloat32); };
    // The N payloads of column l (shards (m, l), m = 0..N-1) in one message: offsets.
    auto columnLayout = [&](int l, auto bytesOf, std::vector<size_t>& off) {
      off.assign(static_cast<size_t>(N) + 1, 0);
      for (int m = 0; m < N; ++m) off[m + 1] = off[m] + bytesOf(rankOf(m, l));
      return off[static_cast<size_t>(N)];
    };
    std::vector<RequestPtr> reqs;
    std::vector<PoolBuffer> bufs;

    // ---- 1. intra reduce-scatter ------------------------------------------------------------
    std::vector<size_t> myOff;
    const size_t myColumn = columnLayout(l0, intraBytes, myOff);
    std::vector<PoolBuffer> fromLocal(static_cast<size_t>(L));
    for (int l = 0; l < L; ++l)
      if (l != l0 && myColumn) {
        fromLocal[l] = pool.get(myColumn);
        reqs.push_back(t.irecv(rankOf(n0, l), subTag(tag, kIntraRS, k), fromLocal[l].data(), myColumn));
      }
    for (int d = 1; d < L; ++d) {
      const int l = (l0 + d) % L;
      std::vector<size_t> off;
      const size_t bytes = columnLayout(l, intraBytes, off);
      if (!bytes) continue;
      bufs.push_back(pool.get(bytes));
      char* msg = bufs.back().as<char>();
      for (int m = 0; m < N; ++m) {
        const Range r = piece(rankOf(m, l));
        if (r.count) intra.encode(in + r.begin * es, dt, r.count, msg + off[m]);
      }
      reqs.push_back(t.isend(rankOf(n0, l), subTag(tag, kIntraRS, k), msg, bytes));
      wireSent += bytes;
    }
    wt.waitAll(reqs, "two-level intra-node reduce-scatter");
    for (int m = 0; m < N; ++m) {
      const Range r = piece(rankOf(m, l0));
      std::vector<float>& a = acc[m];
      a.assign(r.count, -0.0f);  // -0: the first term is taken exactly
      if (!r.count) continue;
      for (int l = 0; l < L; ++l) {
        if (l == l0)
          accumulateToFloat(in + r.begin * es, dt, r.count, a.data());
        else
          intra.decodeAccumulate(fromLocal[l].as<char>() + myOff[m], r.count, dt, a.data());
      }
    }
    fromLocal.clear();
    bufs.clear();
    reqs.clear();

    // ---- 2. inter reduce-scatter ------------------------------------------------------------
    const Range mine = piece(me);
    const size_t myInter = interBytes(me);
    std::vector<PoolBuffer> fromNode(static_cast<size_t>(N));
    for (int m = 0; m < N; ++m)
      if (m != n0 && mine.count) {
        fromNode[m] = pool.get(myInter);
        reqs.push_back(t.irecv(rankOf(m, l0), subTag(tag, kInterRS, k), fromNode[m].data(), myInter));
      }
    for (int d = 1; d < N; ++d) {
      const int m = (n0 + d) % N;
      const Range r = piece(rankOf(m, l0));
      if (!r.count) continue;
      const size_t bytes = interBytes(rankOf(m, l0));
      bufs.push_back(pool.get(bytes));
      inter.encode(acc[m].data(), cocclFloat32, r.count, bufs.back().data());
      reqs.push_back(t.isend(rankOf(m, l0), subTag(tag, kInterRS, k), bufs.back().data(), bytes));
      wireSent += bytes;
    }
    wt.waitAll(reqs, "two-level inter-node reduce-scatter");
    total.assign(mine.count, -0.0f);
    for (int m = 0; m < N && mine.count; ++m) {
      if (m == n0) {
        for (size_t i = 0; i < mine.count; ++i) total[i] += acc[m][i];
      } else {
        inter.decodeAccumulate(fromNode[m].data(), mine.count, cocclFloat32, total.data());
      }
    }
    if (scale != 1.0f) scaleFloats(total.data(), total.size(), scale);
    fromNode.clear();
    bufs.clear();
    reqs.clear();
    if (!allReduce) {
      if (mine.count) convertFromFloat(total.data(), mine.count, dt, outAt(me, mine));
      continue;
    }

    // ---- 3. all-gather: inter, then intra ---------------------------------------------------
    std::vector<size_t> colOff;
    const size_t colBytes = columnLayout(l0, interBytes, colOff);
    PoolBuffer column = pool.get(std::max<size_t>(colBytes, 1));  // my column's N results
    char* col = column.as<char>();
    if (mine.count) inter.encode(total.data(), cocclFloat32, mine.count, col + colOff[n0]);
    for (int m = 0; m < N; ++m) {
      const Range r = piece(rankOf(m, l0));
      if (m == n0 || !r.count) continue;
      reqs.push_back(t.irecv(rankOf(m, l0), subTag(tag, kInterAG, k), col + colOff[m],
                             colOff[m + 1] - colOff[m]));
    }
    for (int d = 1; d < N && mine.count; ++d) {
      const int m = (n0 + d) % N;
      reqs.push_back(t.isend(rankOf(m, l0), subTag(tag, kInterAG, k), col + colOff[n0], myInter));
      wireSent += myInter;
    }
    wt.waitAll(reqs, "two-level inter-node all-gather");
    std::vector<std::vector<size_t>> offs(static_cast<size_t>(L));
    std::vector<PoolBuffer> cols(static_cast<size_t>(L));
    for (int l = 0; l < L; ++l) {
      const size_t bytes = columnLayout(l, interBytes, offs[l]);
      if (l == l0 || !bytes) continue;
      cols[l] = pool.get(bytes);
      reqs.push_back(t.irecv(rankOf(n0, l), subTag(tag, kIntraAG, k), cols[l].data(), bytes));
    }
    for (int d = 1; d < L && colBytes; ++d) {
      const int l = (l0 + d) % L;
      reqs.push_back(t.isend(rankOf(n0, l), subTag(tag, kIntraAG, k), col, colBytes));
      wireSent += colBytes;
    }
    wt.waitAll(reqs, "two-level intra-node all-gather");
    for (int l = 0; l < L; ++l) {
      const char* src = l == l0 ? col : cols[l].as<char>();
      for (int m = 0; m < N; ++m) {
        const int r = rankOf(m, l);
        const Range pr = piece(r);
        if (pr.count) inter.decode(src + offs[l][m], pr.count, dt, outAt(r, pr));
      }
    }
  }
  c.stats().wireBytesSent += wireSent;
}

}  // namespace coccl
