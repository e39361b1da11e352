// The staged codec pipeline (staged_codec.h).
//
// ---- Pipeline ------------------------------------------------------------------------------
// S = the caller's stream (codec kernels), C = the internal stream (the mover's grouped sends
// and receives). A message is processed in pieces k = 0..K-1 (piece k of every shard), all of
// one size but the last (Impl::evenPiece). Staging holds two sets of slots (set k % 2); per
// set: send[p], recv[p], red, gath[p], each slotBytes long (the executor's choice: CUDA IPC
// COCCL_CHUNK_BYTES, NCCL 4 x that up to 8 ranks), 128-byte aligned, with a head of 128 bytes
// in front of each: where the mover carries a call's descriptor (Impl::storeHeads).
//
// Two-shot AllReduce, five stages: enc(k) S -> x1(k) C -> red(k) S -> x2(k) C -> dec(k) S,
// issued as
//   enc(0) x1(0); for k: { enc(k+1) x1(k+1); red(k) x2(k); dec(k-1) }; dec(K-1)
// so that S encodes piece k+1 and decode-reduces piece k while C moves piece k's bytes. Every
// arrow is an event recorded on one stream and waited on the other (graph capture follows it).
// Slot reuse is safe with two sets: a slot of set k % 2 is rewritten for piece k+2 by a stage
// issued after the stream that writes it has waited for the stage that last read it (e.g.
// enc(k+2) follows red(k) on S, and red(k) waited for x1(k), the reader of send[set]).
// ReduceScatter and AllGather have three stages: a(k) S -> x(k) C -> b(k) S, issued
//   a(0) x(0); for k: { a(k+1) x(k+1); b(k) }.
// The last stage of a call is on S and waits for C's last transfer, so a call ends joined.
// A mover with an allGather (NCCL) runs the gather stages (AllReduce's x2, AllGather's x) as one
// allGather of piece k, in place in the gath slots of set k % 2 read as one buffer: payload j
// at slot(k, kGath, 0) + j * stride(k) (gatherStrideOf); the owner step writes its result there.
// The same slot-reuse argument holds: the gath slots of a set are written by red(k) / a(k) on S
// after S issued dec(k-2) / b(k-2), their last reader.
// One-shot AllReduce (StagedAllReduce) has the three stages of AllGather, with a reduction of
// all p payloads as b(k) (oneShotAllReduce below).
#include "collectives/staged/staged_codec.h"

#include <algorithm>

#include "collectives/staged/staged_impl.h"

namespace coccl {

StagedAllReduce stagedAllReduceAlgo(const std::string& a) {
  if (a == "one-shot") return StagedAllReduce::OneShot;
  if (a == "auto") return StagedAllReduce::Auto;
  return StagedAllReduce::TwoShot;
}

StagedCodec::StagedCodec(int nranks, int rank, size_t slotBytes, ByteMover& mover,
                         const char* algoSuffix, StagedAllReduce allReduce)
    : impl_(std::make_unique<Impl>(nranks, rank, slotBytes, mover)) {
  Impl& m = *impl_;
  m.oneShot = allReduce == StagedAllReduce::OneShot ||
              (allReduce == StagedAllReduce::Auto && nranks == 2 && mover.hasAllGather());
  m.arName = std::string(m.oneShot ? "one-shot/" : "two-shot/") + algoSuffix;
  m.directName = std::string("direct/") + algoSuffix;
  void* st = nullptr;
  COCCL_CUDA_CHECK(cudaMalloc(&st, Impl::stagingSlots(nranks) * m.slotStride()));
  m.staging = static_cast<char*>(st);
  void* a = nullptr;
  COCCL_CUDA_CHECK(cudaMalloc(&a, 4 * slotBytes));
  m.acc = static_cast<float*>(a);
  COCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&m.side, cudaStreamNonBlocking));
  auto event = [](cudaEvent_t* e) {
    COCCL_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  };
  for (auto& row : m.ev)
    for (cudaEvent_t& e : row) event(&e);
  for (cudaEvent_t* e : {&m.tail, &m.startEv, &m.joinEv}) event(e);
}

StagedCodec::~StagedCodec() = default;

size_t StagedCodec::stagingBytes() const {
  const Impl& m = *impl_;
  return Impl::stagingSlots(m.p) * m.slotStride() + 4 * m.slotBytes;
}

cudaStream_t StagedCodec::sideStream() const { return impl_->side; }

void StagedCodec::setTwoLevel(int ranksPerNode, size_t chunkBytes, bool pipelined) {
  Impl& m = *impl_;
  m.ranksPerNode = std::max(ranksPerNode, 1);
  m.hierChunkBytes = std::max<size_t>(chunkBytes, 1);
  m.hierPipelined = pipelined;
  m.hierName = "hierarchical/" + m.directName.substr(m.directName.find('/') + 1);
}

namespace {

// A "hier:" call as it runs: two levels when the nodes have 2..p-1 ranks each; else flat with
// the one level there is (one rank a node: the inter codec; one node: the intra codec), as on
// the host (host_executor.cc).
bool twoLevel(const CollRequest& r, int L, int p) { return r.interCodec && L > 1 && L < p; }

CollRequest flatOf(const CollRequest& r, int L) {
  CollRequest f = r;
  if (r.interCodec && L == 1) f.codec = r.interCodec;
  f.interCodec = nullptr;
  return f;
}

}  // namespace

bool StagedCodec::supports(const CollRequest& r) const {
  const Impl& m = *impl_;
  if (r.mem != MemKind::Device || !r.codec || !r.codec->hasDeviceOps()) return false;
  if (r.interCodec) {
    if (r.coll != Coll::AllReduce && r.coll != Coll::ReduceScatter) return false;
    if (!twoLevel(r, m.ranksPerNode, m.p)) return supports(flatOf(r, m.ranksPerNode));
    // (L > 1 only after setTwoLevel; L divides p: CommContext::ranksPerNode)
    return r.interCodec->hasDeviceOps() && m.ranksPerNode <= kernels::kMaxReduceInputs &&
           m.p / m.ranksPerNode <= kernels::kMaxReduceInputs;
  }
  const bool reduces = r.coll == Coll::AllReduce || r.coll == Coll::ReduceScatter;
  if (!reduces && r.coll != Coll::AllGather) return false;
  // a piece is at least one block, whose payload must fit a slot (and a gather's p strides the
  // gath slots)
  return r.codec->blockElems() <= m.slotBytes &&
         r.codec->encodedBytes(r.codec->blockElems(), r.dt) <= m.slotBytes &&
         !(reduces && m.p > kernels::kMaxReduceInputs);
}

void StagedCodec::run(const CollRequest& r, CollStats& stats, bool agree) {
  Impl& m = *impl_;
  if (agree) {  // carried by the call's first exchange (Impl::move); never left for a later call
    COCCL_CHECK_INTERNAL(
        m.mover.agreesInExchange() && (m.mover.carriesInHeads() || !m.mover.hasAllGather()),
        "staged codec pipeline: this transport cannot compare call descriptors");
    m.pendingDesc = makeCallDesc(r);
    // in heads where the mover can; the two-level calls in their own groups (staged_hier.cc)
    m.headed = m.mover.carriesInHeads() && !(r.interCodec && twoLevel(r, m.ranksPerNode, m.p));
    m.agreePending = !m.headed;
  }
  struct Clear {
    Impl& m;
    ~Clear() {
      m.agreePending = m.headed = false;
      m.headsStage = Impl::HeadsStage::None;
    }
  } clear{m};
  if (r.interCodec) {
    if (twoLevel(r, m.ranksPerNode, m.p)) return m.hierReduce(r, stats);
    return run(flatOf(r, m.ranksPerNode), stats);
  }
  switch (r.coll) {
    case Coll::AllReduce: return m.oneShot ? m.oneShotAllReduce(r, stats) : m.allReduce(r, stats);
    case Coll::ReduceScatter: return m.reduceScatter(r, stats);
    case Coll::AllGather: return m.allGather(r, stats);
    default: COCCL_THROW(cocclInternalError, "staged codec pipeline: %s", collName(r.coll));
  }
}

// ---- AllReduce ----------------------------------------------------------------------------------

void StagedCodec::Impl::allReduce(const CollRequest& r, CollStats& stats) {
  Impl& m = *this;
  const void* in = r.in;
  void* out = r.out;
  const size_t count = r.count;
  const cocclDataType_t dt = r.dt;
  const cocclRedOp_t op = r.op;
  const Codec* codec = r.codec;
  const cocclStream_t stream = r.stream;
  const int p = m.p, me = m.me;
  const size_t es = dtypeSize(dt);
  const std::vector<Range> sh = balancedShards(count, p, codec->blockElems());
  size_t longest = 0;
  for (int j = 0; j < p; ++j) longest = std::max(longest, sh[j].count);
  stats.algorithm = m.arName.c_str();
  const size_t piece = m.evenPiece(longest, m.pieceElems(*codec, dt), codec->blockElems());
  const size_t K = numChunks(longest, piece);
  const bool ag = m.mover.hasAllGather();  // the gather stage as one allGather a piece
  // with the allGather, counted below from the pieces' strides
  stats.wireBytesSent =
      ag ? 0 : twoShotWireBytes(sh, me, [&](size_t n) { return codec->encodedBytes(n, dt); });
  if (K == 0) return;
  const float scale = op == cocclAvg ? 1.0f / static_cast<float>(p) : 1.0f;
  auto n = [&](int j, size_t k) {
    const size_t c = sh[j].count;
    return k * piece >= c ? size_t{0} : std::min(piece, c - k * piece);
  };
  auto at = [&](const void* base, int j, size_t k) {
    return static_cast<char*>(const_cast<void*>(base)) + (sh[j].begin + k * piece) * es;
  };
  auto pb = [&](size_t elems) { return codec->encodedBytes(elems, dt); };
  // the gather stage's layout of piece k: owner j's reduced payload at gath(k, j)
  auto stride = [&](size_t k) {
    size_t b = 0;
    for (int j = 0; j < p; ++j) b = std::max(b, n(j, k) ? pb(n(j, k)) : size_t{0});
    return m.gatherStride(b);
  };
  auto gath = [&](size_t k, int j) {
    return ag ? m.slot(k, kGath, 0) + static_cast<size_t>(j) * stride(k) : m.slot(k, kGath, j);
  };
  if (ag) {  // the gather stage sends every piece's stride, the last ones padded
    for (int j = 0; j < p; ++j)
      if (j != me) stats.wireBytesSent += pb(sh[j].count);
    for (size_t k = 0; k < K; ++k) stats.wireBytesSent += static_cast<size_t>(p - 1) * stride(k);
  }
  cudaStream_t s = m.user(stream);
  void* ws = m.workspace(*codec, dt, piece, s);
  const DescHeads heads = m.exchangeHeads(kRecv);
  m.pipeline(s, [&] {
    m.run5(
        K, s,
        [&](size_t k) {  // enc: the pieces of the other owners' shards
          for (int j = 0; j < p; ++j)
            if (j != me && n(j, k))
              codec->deviceEncode(at(in, j, k), dt, n(j, k), m.slot(k, kSend, j), ws, s);
        },
        [&](size_t k) {  // x1: to each owner its piece; from each peer mine
          m.exchange(
              k, [&](int j) { return m.slot(k, kSend, j); },
              [&](int j) { return n(j, k) ? pb(n(j, k)) : 0; }, kRecv,
              [&](int) { return n(me, k) ? pb(n(me, k)) : 0; });
        },
        [&](size_t k) {  // red: decode p-1 payloads + my raw piece, sum, encode once, decode mine
          if (!n(me, k)) return;
          std::vector<const void*>& ins = m.ins;
          for (int j = 0; j < p; ++j)
            ins[static_cast<size_t>(j)] = j == me ? nullptr : m.slot(k, kRecv, j);
          codec->deviceDecodeReduceEncode(ins.data(), p, me, at(in, me, k), dt, n(me, k), scale,
                                          ag ? gath(k, me) : m.slot(k, kRed, 0), at(out, me, k),
                                          ws, s);
        },
        [&](size_t k) {  // x2: my reduced piece to everyone; theirs to me
          if (ag) {
            m.mover.allGather(gath(k, me), gath(k, 0), stride(k), m.side);
            return;
          }
          m.exchange(
              k, [&](int) { return m.slot(k, kRed, 0); },
              [&](int) { return n(me, k) ? pb(n(me, k)) : 0; }, kGath,
              [&](int j) { return n(j, k) ? pb(n(j, k)) : 0; });
        },
        [&](size_t k) {  // dec: the other owners' reduced pieces
          for (int j = 0; j < p; ++j)
            if (j != me && n(j, k))
              codec->deviceDecode(gath(k, j), n(j, k), dt, at(out, j, k), ws, s);
        },
        m.headed ? &heads : nullptr);
  });
}

// One-shot: a(k) encode piece k of my input into my gather slot, x(k) everyone's payload of
// piece k to everyone (Impl::gather: the mover's allGather in place in the gath slots, else a
// grouped exchange into recv[j]), b(k) sum the p payloads in rank order into the fp32
// accumulator from +0, scale, round into the output (the host's one-shot, bit for bit). In place
// is safe: a(k+1) reads input piece k+1 before b(k) writes output piece k (both on S, in that
// order). The slots are reused as in AllGather (the same three stages and layout).
void StagedCodec::Impl::oneShotAllReduce(const CollRequest& r, CollStats& stats) {
  Impl& m = *this;
  const cocclDataType_t dt = r.dt;
  const Codec* codec = r.codec;
  const int p = m.p, me = m.me;
  const size_t es = dtypeSize(dt), count = r.count;
  stats.algorithm = m.arName.c_str();
  const size_t piece = m.evenPiece(count, m.pieceElems(*codec, dt), codec->blockElems());
  const size_t K = numChunks(count, piece);
  auto n = [&](size_t k) { return std::min(piece, count - k * piece); };
  auto pb = [&](size_t elems) { return codec->encodedBytes(elems, dt); };
  auto stride = [&](size_t k) { return m.gatherStrideOf(k, pb(n(k))); };
  stats.wireBytesSent = 0;
  for (size_t k = 0; k < K; ++k) stats.wireBytesSent += m.gatherWireBytes(pb(n(k)));
  if (K == 0) return;
  const float scale = r.op == cocclAvg ? 1.0f / static_cast<float>(p) : 1.0f;
  cudaStream_t s = m.user(r.stream);
  void* ws = m.workspace(*codec, dt, piece, s);
  const DescHeads heads = m.gatherHeads(stride(0));
  m.pipeline(s, [&] {
    m.run3(
        K, s,
        [&](size_t k) {
          codec->deviceEncode(static_cast<const char*>(r.in) + k * piece * es, dt, n(k),
                              m.gathered(k, me, stride(k)), ws, s);
        },
        [&](size_t k) { m.gather(k, pb(n(k)), stride(k)); },
        [&](size_t k) {
          COCCL_CUDA_CHECK(cudaMemsetAsync(m.acc, 0, n(k) * sizeof(float), s));
          for (int j = 0; j < p; ++j) m.ins[static_cast<size_t>(j)] = m.gathered(k, j, stride(k));
          codec->deviceDecodeAccumulate(m.ins.data(), p, n(k), dt, m.acc, ws, s);
          launchFinishReduce(m.acc, n(k), scale, dt, static_cast<char*>(r.out) + k * piece * es,
                             r.stream);
        },
        m.headed ? &heads : nullptr);
  });
}

}  // namespace coccl
