// Two-level (hierarchical) ReduceScatter and AllReduce on device buffers (staged_codec.h,
// setTwoLevel): SDP4Bit's scheme (Jia et al., "SDP4Bit", NeurIPS 2024, section 3.2) as the
// host path runs it (collectives/host/hierarchical.cc has the steps and the wire layout), with
// the codecs' device operations and the mover's grouped exchanges. The same shards, pieces
// (the host's chunks: chunkElems(COCCL_CHUNK_BYTES, element size, the larger block)), codec
// bytes and fp32 summation order (each sum from -0, terms in local-rank, then node order), so
// every output equals the host path's bit for bit, and every rank decodes the same bytes.
//
// Ranks r = n L + l. A piece q (piece q of every shard) is a first step and E exchanges, each
// followed by a step (kernels on the caller's stream S):
//   pre     intra-encode, for each local peer l, the N pieces of its column (m, l), m = 0..N-1
//   x1      with the local peers: my column's payloads from each, theirs to them
//   post1   per m, acc_m = sum over l = 0..L-1 of (my raw input | decode(payload of l)); encode
//           acc_m (fp32, inter codec) for every other node m
//   x2      with (m, l) for every other node m: acc_m's payload to it, its payload of mine to me
//   post2   total = sum over m = 0..N-1 of (acc_me | decode(payload of m)), scaled for AVG;
//           ReduceScatter: total rounded to the output type is my piece (E = 2). AllReduce:
//           total encoded once (inter codec) into my column's place (m = me)
//   x3      AllReduce: my column's payloads from the other nodes, mine to them
//   x4      AllReduce: my column to every local peer, theirs to me
//   post4   AllReduce: decode all p payloads into the output (E = 4).
// Software pipeline: step t runs ONE grouped exchange holding exchange j of piece t - j for
// every j (x1 of piece t, x2 of piece t-1, ...), then the step after each of them (post_j of
// piece t - j, oldest piece first), then pre of piece t + 1. So the links to the local peers and
// to the other nodes carry several pieces at once instead of one exchange at a time; every
// stage is on S in that order, so no events are needed. Piece q lives from pre (step q - 1) to
// its last step (step q + E - 1): E + 1 pieces at once, each in its own set of the two-level
// staging (hierStaging), set q % (E + 1), reused by piece q + E + 1 only after piece q's last
// step (stream order). Each payload has its own 256-byte aligned place in its set and moves as
// its own transfer: several transfers between one pair of ranks in a group are matched in the
// order they are posted, which is the same at both ends (exchanges in j order, each in its
// fixed order, the same zero-size ones skipped), so the wire carries the host's bytes exactly
// (CollStats::wireBytesSent equals the host's).
#include <algorithm>
#include <functional>

#include "collectives/staged/staged_impl.h"

namespace coccl {
namespace {

size_t up256(size_t b) { return (b + 255) / 256 * 256; }

}  // namespace

void StagedCodec::Impl::hierReduce(const CollRequest& r, CollStats& stats) {
  Impl& m = *this;
  const Codec& intra = *r.codec;
  const Codec& inter = *r.interCodec;
  const bool all = r.coll == Coll::AllReduce;
  const int p = m.p, me = m.me, L = m.ranksPerNode, N = p / L, n0 = me / L, l0 = me % L;
  COCCL_CHECK_ARG(L > 1 && L < p && p % L == 0, "two-level: %d ranks per node for %d ranks", L, p);
  auto rankOf = [&](int n, int l) { return n * L + l; };
  const cocclDataType_t dt = r.dt;
  const size_t es = dtypeSize(dt);
  const size_t align = std::max(intra.blockElems(), inter.blockElems());
  const std::vector<Range> shards = all ? balancedShards(r.count, p, align) : equalShards(r.count, p);
  const size_t chunk = chunkElems(m.hierChunkBytes, es, align);
  size_t K = 0;
  for (const Range& s : shards) K = std::max(K, numChunks(s.count, chunk));
  stats.algorithm = m.hierName.c_str();
  stats.wireBytesSent = 0;
  if (K == 0) return;
  const float scale = r.op == cocclAvg ? 1.0f / static_cast<float>(p) : 1.0f;
  cudaStream_t s = m.user(r.stream);
  const int E = all ? 4 : 2;  // exchanges a piece
  const size_t sets = static_cast<size_t>(E) + 1;

  // A set: intra payloads sent [l][m] and received [l][m] (p places of ui bytes each), acc_m
  // (N x chunk floats), inter payloads sent [m] and received [m] (N places of ue bytes each),
  // the total (chunk floats), AllReduce's gathered columns [l][m] (p places of ue bytes). A
  // place holds the largest payload of any piece: a whole chunk's or a shard's last piece's (a
  // partial block kept exact can make a shorter piece's payload the longer one).
  size_t ui = 0, ue = 0;
  auto room = [&](size_t n) {
    if (!n) return;
    ui = std::max(ui, up256(intra.encodedBytes(n, dt)));
    ue = std::max(ue, up256(inter.encodedBytes(n, cocclFloat32)));
  };
  room(chunk);
  for (const Range& sh : shards)
    if (sh.count) room(sh.count - (numChunks(sh.count, chunk) - 1) * chunk);
  const size_t accBytes = up256(chunk * sizeof(float));
  const size_t P = static_cast<size_t>(p), NN = static_cast<size_t>(N);
  const size_t oIntraSend = 0, oIntraRecv = P * ui, oAcc = 2 * P * ui;
  const size_t oInterSend = oAcc + NN * accBytes, oInterRecv = oInterSend + NN * ue;
  const size_t oTotal = oInterRecv + NN * ue, oCols = oTotal + accBytes;
  const size_t perSet = oCols + (all ? P * ue : 0);
  char* base = static_cast<char*>(grown(m.hierStaging, sets * perSet, "two-level collective",
                                        "device staging", s));
  auto set = [&](size_t q) { return base + (q % sets) * perSet; };
  auto lm = [&](int l, int mm) { return static_cast<size_t>(l) * NN + static_cast<size_t>(mm); };
  auto intraSend = [&](size_t q, int l, int mm) { return set(q) + oIntraSend + lm(l, mm) * ui; };
  auto intraRecv = [&](size_t q, int l, int mm) { return set(q) + oIntraRecv + lm(l, mm) * ui; };
  auto acc = [&](size_t q, int mm) {
    return reinterpret_cast<float*>(set(q) + oAcc + static_cast<size_t>(mm) * accBytes);
  };
  auto interSend = [&](size_t q, int mm) { return set(q) + oInterSend + static_cast<size_t>(mm) * ue; };
  auto interRecv = [&](size_t q, int mm) { return set(q) + oInterRecv + static_cast<size_t>(mm) * ue; };
  auto total = [&](size_t q) { return reinterpret_cast<float*>(set(q) + oTotal); };
  auto col = [&](size_t q, int l, int mm) { return set(q) + oCols + lm(l, mm) * ue; };
  // The codecs' device workspace: the largest any of their operations on a piece asks for.
  const size_t wsNeed = std::max({intra.deviceWorkspaceBytes(chunk, dt, L),
                                  inter.deviceWorkspaceBytes(chunk, cocclFloat32, N),
                                  inter.deviceWorkspaceBytes(chunk, dt, N)});
  void* ws = grown(m.ws, wsNeed, "two-level collective", "codec device workspace", s);

  const char* in = static_cast<const char*>(r.in);
  char* out = static_cast<char*>(r.out);
  auto outAt = [&](int j, const Range& piece) {
    return all ? out + piece.begin * es : out + (piece.begin - shards[static_cast<size_t>(j)].begin) * es;
  };
  auto piece = [&](size_t q, int j) { return chunkOf(shards[static_cast<size_t>(j)], chunk, q); };
  auto intraBytes = [&](size_t q, int j) {
    const size_t c = piece(q, j).count;
    return c ? intra.encodedBytes(c, dt) : 0;
  };
  auto interBytes = [&](size_t q, int j) {
    const size_t c = piece(q, j).count;
    return c ? inter.encodedBytes(c, cocclFloat32) : 0;
  };
  const CodecDesc raw{};  // the None codec: decodeAccumulate of raw elements
  size_t wireSent = 0;
  std::vector<const void*> ins;
  // sum over terms t = 0..T-1 in order into a (from -0): t == self is the raw `selfIn` of
  // type `rawType`, the others payloads of `c` (decoded as `payloadType`).
  auto sumInto = [&](float* a, size_t n, int T, int self, const void* selfIn,
                     cocclDataType_t rawType, const Codec& c, cocclDataType_t payloadType,
                     const std::function<const void*(int)>& payload) {
    launchFillFloats(a, n, -0.0f, r.stream);
    ins.assign(static_cast<size_t>(T), nullptr);
    for (int t = 0; t < T; ++t) ins[static_cast<size_t>(t)] = t == self ? selfIn : payload(t);
    if (self > 0) c.deviceDecodeAccumulate(ins.data(), self, n, payloadType, a, ws, s);
    kernels::decodeAccumulate(raw, ins.data() + self, 1, n, rawType, a, s);
    if (self + 1 < T)
      c.deviceDecodeAccumulate(ins.data() + self + 1, T - self - 1, n, payloadType, a, ws, s);
  };
  auto post = [&](void* buf, size_t bytes, int peer, bool send) {
    if (!bytes) return;
    m.group.push_back({buf, bytes, peer, send});
    if (send) wireSent += bytes;
  };

  // ---- the steps of piece q ----------------------------------------------------------------
  auto pre = [&](size_t q) {
    for (int d = 1; d < L; ++d) {
      const int l = (l0 + d) % L;
      for (int mm = 0; mm < N; ++mm) {
        const Range pr = piece(q, rankOf(mm, l));
        if (pr.count) intra.deviceEncode(in + pr.begin * es, dt, pr.count, intraSend(q, l, mm), ws, s);
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
      if (mm != n0) inter.deviceEncode(acc(q, mm), cocclFloat32, pr.count, interSend(q, mm), ws, s);
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
    if (!all) return launchFinishReduce(total(q), mine.count, scale, dt, outAt(me, mine), r.stream);
    if (scale != 1.0f) launchFinishReduce(total(q), mine.count, scale, cocclFloat32, total(q), r.stream);
    inter.deviceEncode(total(q), cocclFloat32, mine.count, col(q, l0, n0), ws, s);
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
      for (int mm = 0; mm < N; ++mm) post(col(q, l0, mm), interBytes(q, rankOf(mm, l0)), rankOf(n0, l), true);
      for (int mm = 0; mm < N; ++mm) post(col(q, l, mm), interBytes(q, rankOf(mm, l)), rankOf(n0, l), false);
    }
  };
  auto post4 = [&](size_t q) {
    for (int l = 0; l < L; ++l)
      for (int mm = 0; mm < N; ++mm) {
        const int j = rankOf(mm, l);
        const Range pr = piece(q, j);
        if (pr.count) inter.deviceDecode(col(q, l, mm), pr.count, dt, outAt(j, pr), ws, s);
      }
  };
  auto nothing = [](size_t) {};
  const std::function<void(size_t)> xs[4] = {x1, x2, x3, x4};
  const std::function<void(size_t)> posts[4] = {post1, post2, nothing, post4};

  m.pipeline(s, [&] {
    pre(0);
    for (size_t t = 0; t + 1 < K + static_cast<size_t>(E); ++t) {
      m.group.clear();
      for (int j = 0; j < E; ++j)
        if (t >= static_cast<size_t>(j) && t - static_cast<size_t>(j) < K) xs[j](t - static_cast<size_t>(j));
      m.mover.exchange(m.group, s);
      for (int j = E - 1; j >= 0; --j)
        if (t >= static_cast<size_t>(j) && t - static_cast<size_t>(j) < K) posts[j](t - static_cast<size_t>(j));
      if (t + 1 < K) pre(t + 1);
    }
  });
  stats.wireBytesSent = wireSent;
}

}  // namespace coccl
