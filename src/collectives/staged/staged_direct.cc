// The staged pipeline's direct collectives: ReduceScatter and AllGather (staged_codec.h; the
// pipeline at the top of staged_codec.cc).
#include "collectives/staged/staged_impl.h"

namespace coccl {

StagedCodec::Impl::Direct StagedCodec::Impl::direct(const CollRequest& r, CollStats& stats) {
  Direct d{};
  d.count = r.count;
  d.es = dtypeSize(r.dt);
  stats.wireBytesSent = directWireBytes(r.codec->encodedBytes(r.count, r.dt), p);
  stats.algorithm = directName.c_str();
  d.piece = evenPiece(r.count, pieceElems(*r.codec, r.dt), r.codec->blockElems());
  d.K = numChunks(r.count, d.piece);
  d.s = user(r.stream);
  d.ws = d.K ? workspace(*r.codec, r.dt, d.piece, d.s) : nullptr;
  return d;
}

void StagedCodec::Impl::reduceScatter(const CollRequest& r, CollStats& stats) {
  Impl& m = *this;
  const void* in = r.in;
  void* out = r.out;
  const cocclDataType_t dt = r.dt;
  const Codec* codec = r.codec;
  const int p = m.p, me = m.me;
  const Direct d = m.direct(r, stats);
  if (d.K == 0) return;
  const size_t recvcount = d.count, piece = d.piece, es = d.es;
  const float scale = r.op == cocclAvg ? 1.0f / static_cast<float>(p) : 1.0f;
  auto n = [&](size_t k) { return d.n(k); };
  auto at = [&](const void* base, int j, size_t k) {
    return static_cast<char*>(const_cast<void*>(base)) +
           (static_cast<size_t>(j) * recvcount + k * piece) * es;
  };
  auto pb = [&](size_t elems) { return codec->encodedBytes(elems, dt); };
  const CodecDesc raw{};  // the None codec: decodeAccumulate of raw elements of dt
  cudaStream_t s = d.s;
  void* ws = d.ws;
  const DescHeads heads = m.exchangeHeads(kRecv);
  m.pipeline(s, [&] {
    m.run3(
        d.K, s,
        [&](size_t k) {
          for (int j = 0; j < p; ++j)
            if (j != me) codec->deviceEncode(at(in, j, k), dt, n(k), m.slot(k, kSend, j), ws, s);
        },
        [&](size_t k) {  // to each owner its piece of my input; from each peer mine
          auto bytes = [&](int) { return pb(n(k)); };
          m.exchange(k, [&](int j) { return m.slot(k, kSend, j); }, bytes, kRecv, bytes);
        },
        [&](size_t k) {  // the host's order: ranks 0..p-1, my raw piece in my place, in fp32
          COCCL_CUDA_CHECK(cudaMemsetAsync(m.acc, 0, n(k) * sizeof(float), s));
          std::vector<const void*>& ins = m.ins;
          for (int j = 0; j < p; ++j)
            ins[static_cast<size_t>(j)] = j == me ? at(in, me, k) : m.slot(k, kRecv, j);
          if (me > 0) codec->deviceDecodeAccumulate(ins.data(), me, n(k), dt, m.acc, ws, s);
          kernels::decodeAccumulate(raw, ins.data() + me, 1, n(k), dt, m.acc, s);
          if (me + 1 < p)
            codec->deviceDecodeAccumulate(ins.data() + me + 1, p - me - 1, n(k), dt, m.acc, ws, s);
          launchFinishReduce(m.acc, n(k), scale, dt, static_cast<char*>(out) + k * piece * es,
                             r.stream);
        },
        m.headed ? &heads : nullptr);
  });
}

void StagedCodec::Impl::allGather(const CollRequest& r, CollStats& stats) {
  Impl& m = *this;
  const void* in = r.in;
  void* out = r.out;
  const cocclDataType_t dt = r.dt;
  const Codec* codec = r.codec;
  const int p = m.p, me = m.me;
  const Direct d = m.direct(r, stats);
  if (d.K == 0) return;
  const size_t sendcount = d.count, piece = d.piece, es = d.es;
  auto n = [&](size_t k) { return d.n(k); };
  auto pb = [&](size_t elems) { return codec->encodedBytes(elems, dt); };
  auto stride = [&](size_t k) { return m.gatherStrideOf(k, pb(n(k))); };
  if (m.mover.hasAllGather()) {  // the padded strides (else direct()'s payload count holds)
    stats.wireBytesSent = 0;
    for (size_t k = 0; k < d.K; ++k) stats.wireBytesSent += m.gatherWireBytes(pb(n(k)));
  }
  cudaStream_t s = d.s;
  void* ws = d.ws;
  const DescHeads heads = m.gatherHeads(stride(0));
  m.pipeline(s, [&] {
    m.run3(
        d.K, s,
        [&](size_t k) {  // encode my piece once
          codec->deviceEncode(static_cast<const char*>(in) + k * piece * es, dt, n(k),
                              m.gathered(k, me, stride(k)), ws, s);
        },
        [&](size_t k) { m.gather(k, pb(n(k)), stride(k)); },  // mine to everyone, theirs to me
        [&](size_t k) {  // every rank decodes every shard, its own too: identical outputs
          for (int j = 0; j < p; ++j)
            codec->deviceDecode(
                m.gathered(k, j, stride(k)), n(k), dt,
                static_cast<char*>(out) + (static_cast<size_t>(j) * sendcount + k * piece) * es,
                ws, s);
        },
        m.headed ? &heads : nullptr);
  });
}

}  // namespace coccl
