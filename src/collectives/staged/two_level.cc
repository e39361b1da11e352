// The two-level schedule (two_level.h).
//
// Ranks r = n L + l (node n of N, local rank l). A piece q (piece q of every shard) is a first
// step and E exchanges, each followed by a step:
//   pre     intra-encode, for each local peer l, the N pieces of its column (m, l), m = 0..N-1
//   x1      with the local peers: my column's payloads from each, theirs to them
//   post1   per m, acc_m = sum over l = 0..L-1 of (my raw input | decode(payload of l)) from -0;
//           encode acc_m (fp32, inter codec) for every other node m
//   x2      with (m, l) for every other node m: acc_m's payload to it, its payload of mine to me
//   post2   total = sum over m = 0..N-1 of (acc_me | decode(payload of m)) from -0, scaled for
//           AVG; ReduceScatter: total rounded to the output type is my piece (E = 2);
//           AllReduce: total encoded once (inter codec) into my column's place (m = me)
//   x3      AllReduce: my column's payloads from the other nodes, mine to them
//   x4      AllReduce: my column to every local peer, theirs to me
//   post4   AllReduce: decode all p payloads into the output (E = 4).
// Pipelined, step t runs ONE grouped exchange holding exchange j of piece t - j for every j
// (x1 of piece t, x2 of piece t-1, ...), then the step after each of them (post_j of piece
// t - j, oldest piece first), then pre of piece t + 1: the links to the local peers and to the
// other nodes carry several pieces at once. Piece q lives from its pre (step q - 1) to its last
// step (step q + E - 1), and step t runs the last step of piece t - E + 1 before the pre of
// piece t + 1: E pieces at once, each in its own set of the staging, set q % E, reused by piece
// q + E only after piece q's last step (operations are ordered). Sequential: one set, each
// piece's exchanges one group each.
// Each payload has its own 256-byte aligned place in its set and moves as its own transfer;
// between one pair of ranks the transfers of a group are posted in the same order at both ends
// (exchanges in j order, each in its fixed order, the same zero-size ones skipped), so they
// match, and the wire carries the host's payload bytes exactly (the host path adds its call
// agreement's descriptors).
#include "collectives/staged/two_level.h"

#include <algorithm>
#include <functional>

#include "collectives/layout.h"
#include "core/dtype.h"
#include "core/error.h"

namespace coccl {
namespace {

size_t up256(size_t b) {
  return (b + 255) / 256 * 256;
}

size_t alignOf(const TwoLevelCall& c) {
  return std::max(c.intra->blockElems(), c.inter->blockElems());
}

// The call's shards, pieces and staging layout. A set: intra payloads sent [l][m] and received
// [l][m] (p places of ui bytes each), acc_m (N x chunk floats), inter payloads sent [m] and
// received [m] (N places of ue bytes each), the total (chunk floats), AllReduce's gathered
// columns [l][m] (p places of ue bytes). A place holds the largest payload of any piece: a whole
// chunk's or a shard's last piece's (a partial block kept exact can make a shorter piece's
// payload the longer one).
struct Layout {
  std::vector<Range> shards;
  int E = 0;  // exchanges a piece: ReduceScatter 2, AllReduce 4
  size_t chunk = 0, K = 0, sets = 0, ui = 0, ue = 0, accBytes = 0;
  size_t oIntraSend = 0, oIntraRecv = 0, oAcc = 0, oInterSend = 0, oInterRecv = 0, oTotal = 0;
  size_t oCols = 0, perSet = 0;
  size_t stagingBytes() const { return K ? sets * perSet : 0; }
};

Layout layoutOf(const TwoLevelCall& c, const TwoLevelShape& sh) {
  const int p = sh.nranks, L = sh.ranksPerNode;
  COCCL_CHECK_ARG(c.intra && c.inter && L > 1 && L < p && p % L == 0 && sh.rank >= 0 && sh.rank < p,
                  "two-level: %d ranks per node for %d ranks", L, p);
  Layout y;
  const bool all = c.allReduce;
  y.shards = all ? balancedShards(c.count, p, alignOf(c)) : equalShards(c.count, p);
  y.chunk = twoLevelChunkElems(c, sh);
  for (const Range& s : y.shards) y.K = std::max(y.K, numChunks(s.count, y.chunk));
  y.E = all ? 4 : 2;
  y.sets = sh.pipelined ? static_cast<size_t>(y.E) : 1;
  auto room = [&](size_t n) {
    if (!n) return;
    y.ui = std::max(y.ui, up256(c.intra->encodedBytes(n, c.dt)));
    y.ue = std::max(y.ue, up256(c.inter->encodedBytes(n, cocclFloat32)));
  };
  room(y.chunk);
  for (const Range& s : y.shards)
    if (s.count) room(s.count - (numChunks(s.count, y.chunk) - 1) * y.chunk);
  y.accBytes = up256(y.chunk * sizeof(float));
  const size_t P = static_cast<size_t>(p), N = static_cast<size_t>(p / L);
  y.oIntraSend = 0;
  y.oIntraRecv = P * y.ui;
  y.oAcc = 2 * P * y.ui;
  y.oInterSend = y.oAcc + N * y.accBytes;
  y.oInterRecv = y.oInterSend + N * y.ue;
  y.oTotal = y.oInterRecv + N * y.ue;
  y.oCols = y.oTotal + y.accBytes;
  y.perSet = y.oCols + (all ? P * y.ue : 0);
  return y;
}

}  // namespace

size_t twoLevelChunkElems(const TwoLevelCall& c, const TwoLevelShape& s) {
  return chunkElems(s.chunkBytes, dtypeSize(c.dt), alignOf(c));
}

size_t twoLevelStagingBytes(const TwoLevelCall& c, const TwoLevelShape& s) {
  return layoutOf(c, s).stagingBytes();
}

size_t runTwoLevel(const TwoLevelCall& c, const TwoLevelShape& sh, TwoLevelOps& ops) {
  const Layout y = layoutOf(c, sh);  // checks the shape
  const int p = sh.nranks, me = sh.rank, L = sh.ranksPerNode;
  const int N = p / L, n0 = me / L, l0 = me % L;
  auto rankOf = [&](int n, int l) { return n * L + l; };
  const Codec& intra = *c.intra;
  const Codec& inter = *c.inter;
  const bool all = c.allReduce;
  const cocclDataType_t dt = c.dt;
  const size_t es = dtypeSize(dt);
  const std::vector<Range>& shards = y.shards;
  const size_t chunk = y.chunk, K = y.K;
  const int E = y.E;
  if (K == 0) return 0;
  const float scale = c.op == cocclAvg ? 1.0f / static_cast<float>(p) : 1.0f;
  char* base = ops.staging(y.stagingBytes());
  // The places of piece q (Layout above).
  auto set = [&](size_t q) { return base + (q % y.sets) * y.perSet; };
  auto lm = [&](int l, int mm) { return static_cast<size_t>(l * N + mm); };
  auto intraSend = [&](size_t q, int l, int mm) {
    return set(q) + y.oIntraSend + lm(l, mm) * y.ui;
  };
  auto intraRecv = [&](size_t q, int l, int mm) {
    return set(q) + y.oIntraRecv + lm(l, mm) * y.ui;
  };
  auto acc = [&](size_t q, int mm) {
    return reinterpret_cast<float*>(set(q) + y.oAcc + static_cast<size_t>(mm) * y.accBytes);
  };
  auto interSend = [&](size_t q, int mm) {
    return set(q) + y.oInterSend + static_cast<size_t>(mm) * y.ue;
  };
  auto interRecv = [&](size_t q, int mm) {
    return set(q) + y.oInterRecv + static_cast<size_t>(mm) * y.ue;
  };
  auto total = [&](size_t q) { return reinterpret_cast<float*>(set(q) + y.oTotal); };
  auto col = [&](size_t q, int l, int mm) { return set(q) + y.oCols + lm(l, mm) * y.ue; };

  const char* in = static_cast<const char*>(c.in);
  char* out = static_cast<char*>(c.out);
  auto outAt = [&](int j, const Range& piece) {
    return all ? out + piece.begin * es
               : out + (piece.begin - shards[static_cast<size_t>(j)].begin) * es;
  };
  auto piece = [&](size_t q, int j) { return chunkOf(shards[static_cast<size_t>(j)], chunk, q); };
  auto intraBytes = [&](size_t q, int j) {
    const size_t n = piece(q, j).count;
    return n ? intra.encodedBytes(n, dt) : 0;
  };
  auto interBytes = [&](size_t q, int j) {
    const size_t n = piece(q, j).count;
    return n ? inter.encodedBytes(n, cocclFloat32) : 0;
  };
  size_t wireSent = 0;
  std::vector<TwoLevelOps::Xfer> group;
  std::vector<const void*> ins;
  // The sum over terms t = 0..T-1 in order into a, from -0: t == self is the raw `selfIn` of
  // type `rawType`, the others payloads of `codec` (of elements of `payloadType`).
  auto sumInto = [&](float* a, size_t n, int T, int self, const void* selfIn,
                     cocclDataType_t rawType, const Codec& codec, cocclDataType_t payloadType,
                     const std::function<const void*(int)>& payload) {
    ops.fill(a, n, -0.0f);
    ins.assign(static_cast<size_t>(T), nullptr);
    for (int t = 0; t < T; ++t) ins[static_cast<size_t>(t)] = t == self ? selfIn : payload(t);
    if (self > 0) ops.decodeAccumulate(codec, ins.data(), self, n, payloadType, a);
    ops.accumulate(selfIn, rawType, n, a);
    if (self + 1 < T)
      ops.decodeAccumulate(codec, ins.data() + self + 1, T - self - 1, n, payloadType, a);
  };
  auto post = [&](void* buf, size_t bytes, int peer, bool send) {
    if (!bytes) return;
    group.push_back({buf, bytes, peer, send});
    if (send) wireSent += bytes;
  };

  // ---- the steps of piece q ----------------------------------------------------------------
  auto pre = [&](size_t q) {
    for (int d = 1; d < L; ++d) {
      const int l = (l0 + d) % L;
      for (int mm = 0; mm < N; ++mm) {
        const Range pr = piece(q, rankOf(mm, l));
        if (pr.count) ops.encode(intra, in + pr.begin * es, dt, pr.count, intraSend(q, l, mm));
      }
    }
  };
  auto x1 = [&](size_t q) {
    for (int d = 1; d < L; ++d) {
      const int l = (l0 + d) % L;
      for (int mm = 0; mm < N; ++mm)
        post(intraSend(q, l, mm), intraBytes(q, rankOf(mm, l)), rankOf(n0, l), true);
      for (int mm = 0; mm < N; ++mm)
        post(intraRecv(q, l, mm), intraBytes(q, rankOf(mm, l0)), rankOf(n0, l), false);
    }
  };
  auto post1 = [&](size_t q) {
    for (int mm = 0; mm < N; ++mm) {
      const Range pr = piece(q, rankOf(mm, l0));
      if (!pr.count) continue;
      sumInto(acc(q, mm), pr.count, L, l0, in + pr.begin * es, dt, intra, dt,
              [&](int l) { return intraRecv(q, l, mm); });
      if (mm != n0) ops.encode(inter, acc(q, mm), cocclFloat32, pr.count, interSend(q, mm));
    }
  };
  auto x2 = [&](size_t q) {
    for (int d = 1; d < N; ++d) {
      const int mm = (n0 + d) % N;
      post(interSend(q, mm), interBytes(q, rankOf(mm, l0)), rankOf(mm, l0), true);
      post(interRecv(q, mm), interBytes(q, me), rankOf(mm, l0), false);
    }
  };
  auto post2 = [&](size_t q) {
    const Range mine = piece(q, me);
    if (!mine.count) return;
    sumInto(total(q), mine.count, N, n0, acc(q, n0), cocclFloat32, inter, cocclFloat32,
            [&](int mm) { return interRecv(q, mm); });
    if (!all) return ops.finish(total(q), mine.count, scale, dt, outAt(me, mine));
    if (scale != 1.0f) ops.finish(total(q), mine.count, scale, cocclFloat32, total(q));
    ops.encode(inter, total(q), cocclFloat32, mine.count, col(q, l0, n0));
  };
  auto x3 = [&](size_t q) {
    for (int d = 1; d < N; ++d) {
      const int mm = (n0 + d) % N;
      post(col(q, l0, n0), interBytes(q, me), rankOf(mm, l0), true);
      post(col(q, l0, mm), interBytes(q, rankOf(mm, l0)), rankOf(mm, l0), false);
    }
  };
  auto x4 = [&](size_t q) {
    for (int d = 1; d < L; ++d) {
      const int l = (l0 + d) % L;
      for (int mm = 0; mm < N; ++mm)
        post(col(q, l0, mm), interBytes(q, rankOf(mm, l0)), rankOf(n0, l), true);
      for (int mm = 0; mm < N; ++mm)
        post(col(q, l, mm), interBytes(q, rankOf(mm, l)), rankOf(n0, l), false);
    }
  };
  auto post4 = [&](size_t q) {
    for (int l = 0; l < L; ++l)
      for (int mm = 0; mm < N; ++mm) {
        const int j = rankOf(mm, l);
        const Range pr = piece(q, j);
        if (pr.count) ops.decode(inter, col(q, l, mm), pr.count, dt, outAt(j, pr));
      }
  };
  auto nothing = [](size_t) {};
  const std::function<void(size_t)> xs[4] = {x1, x2, x3, x4};
  const std::function<void(size_t)> posts[4] = {post1, post2, nothing, post4};
  auto flush = [&] {
    ops.exchange(group);
    group.clear();
  };

  if (!sh.pipelined) {
    for (size_t q = 0; q < K; ++q) {
      pre(q);
      for (int j = 0; j < E; ++j) {
        xs[j](q);
        flush();
        posts[j](q);
      }
    }
    return wireSent;
  }
  pre(0);
  for (size_t t = 0; t + 1 < K + static_cast<size_t>(E); ++t) {
    auto live = [&](int j) {
      return t >= static_cast<size_t>(j) && t - static_cast<size_t>(j) < K;
    };
    for (int j = 0; j < E; ++j)
      if (live(j)) xs[j](t - static_cast<size_t>(j));
    flush();
    for (int j = E - 1; j >= 0; --j)
      if (live(j)) posts[j](t - static_cast<size_t>(j));
    if (t + 1 < K) pre(t + 1);
  }
  return wireSent;
}

}  // namespace coccl
