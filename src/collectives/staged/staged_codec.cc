// The staged codec pipeline (staged_codec.h).
//
// ---- Pipeline ------------------------------------------------------------------------------
// S = the caller's stream (codec kernels), C = the internal stream (the mover's grouped sends and receives). A message is processed in pieces k = 0..K-1 (piece k of every
// shard). Staging holds two sets of slots (set k % 2); per set: send[p], recv[p], red, gath[p],
// each slotBytes (COCCL_CHUNK_BYTES) long.
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
// at slot(k, kGath, 0) + j * stride(k) (gatherStride); the owner step writes its result there.
// The same slot-reuse argument holds: the gath slots of a set are written by red(k) / a(k) on S
// after S issued dec(k-2) / b(k-2), their last reader.
#include "collectives/staged/staged_codec.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>

#include "codecs/codec.h"
#include "collectives/layout.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/device_codec.h"
#include "mem/cuda_check.h"
#include "mem/device_scratch.h"

namespace coccl {
namespace {

constexpr int kSets = 2;
enum Slot { kSend = 0, kRecv = 1, kRed = 2, kGath = 3 };

}  // namespace

struct StagedCodec::Impl {
  int p, me;
  size_t slotBytes;
  ByteMover& mover;
  std::string arName, directName;  // CollStats::algorithm
  cudaStream_t side = nullptr;
  cudaEvent_t ev[4][kSets] = {};  // per stage boundary and set
  char* staging = nullptr;
  float* acc = nullptr;  // ReduceScatter's fp32 sum of one piece (4 * slotBytes)
  // The end of the last compressed call issued outside a stream capture: the next one, on
  // whatever stream, starts after it (the staging is the communicator's, not the stream's).
  cudaEvent_t tail = nullptr;
  bool tailSet = false;
  std::vector<const void*> ins;  // the p payload pointers of one reduction step (host side)
  std::vector<ByteMover::Xfer> group;  // one exchange (host side)
  DeviceScratch ws;  // the codec's device workspace (grows without waiting for the device)

  Impl(int nranks, int rank, size_t slot, ByteMover& mv)
      : p(nranks), me(rank), slotBytes(slot), mover(mv), ins(static_cast<size_t>(nranks)) {}
  // The owner destroys its transport first (NCCL: ncclCommDestroy / abort), so nothing of
  // ours is still being moved; cudaFree waits for this device's kernels.
  ~Impl() {  // also after a constructor that failed half-way
    for (auto& row : ev)
      for (cudaEvent_t& e : row)
        if (e) COCCL_CUDA_WARN(cudaEventDestroy(e));
    if (tail) COCCL_CUDA_WARN(cudaEventDestroy(tail));
    if (side) COCCL_CUDA_WARN(cudaStreamDestroy(side));
    if (staging) COCCL_CUDA_WARN(cudaFree(staging));
    if (acc) COCCL_CUDA_WARN(cudaFree(acc));
    ws.release();
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
    return staging + (base + idx) * slotBytes;
  }
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
  // Gather stages over the mover's allGather: every rank's payload of piece k at
  // slot(k, kGath, 0) + j * stride, stride = the largest payload of the piece rounded up to
  // 256 bytes (aligned payloads for the vector paths of the codec kernels), at most a slot.
  size_t gatherStride(size_t largestPayload) const {
    const size_t up = (largestPayload + 255) / 256 * 256;
    return std::min(up, slotBytes);
  }
  // Device workspace of the codec's operations on one piece (plug-ins may ask for some; the
  // built-ins need none). Grows, never during a stream capture.
  void* workspace(const Codec& c, cocclDataType_t dt, size_t piece, cudaStream_t s) {
    const size_t need = c.deviceWorkspaceBytes(piece, dt, p);
    if (need == 0) return nullptr;
    if (!ws.fits(need))
      COCCL_CHECK_USAGE(!streamCapturing(s),
                        "codec %s needs %zu bytes of device workspace: run the collective once "
                        "outside the CUDA graph capture first", c.name(), need);
    return ws.grow(need);
  }
  // One exchange of piece k with every peer j, on the internal stream: send sendBytes(j)
  // bytes from `from(j)`, receive recvBytes(j) bytes into slot (k, into, j); zero sizes are
  // skipped (both ends skip the same ones: the sizes follow from the shared shards).
  template <class From, class SendBytes, class RecvBytes>
  void exchange(size_t k, From from, SendBytes sendBytes, Slot into, RecvBytes recvBytes) {
    group.clear();
    for (int j = 0; j < p; ++j) {
      if (j == me) continue;
      if (const size_t b = sendBytes(j)) group.push_back({from(j), b, j, true});
      if (const size_t b = recvBytes(j)) group.push_back({slot(k, into, j), b, j, false});
    }
    mover.exchange(group, side);
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
  void reduceScatter(const CollRequest& r, CollStats& stats);
  void allGather(const CollRequest& r, CollStats& stats);

  cudaStream_t user(cocclStream_t s) const { return reinterpret_cast<cudaStream_t>(s); }
  // `to` waits for everything issued so far on `from` (event of stage boundary `b`, set k).
  void link(cudaStream_t from, cudaStream_t to, int b, size_t k) {
    cudaEvent_t e = ev[b][k % kSets];
    COCCL_CUDA_CHECK(cudaEventRecord(e, from));
    COCCL_CUDA_CHECK(cudaStreamWaitEvent(to, e, 0));
  }

  // Three stages: a(k) on S, x(k) on C, b(k) on S (see the top of this file).
  void run3(size_t K, cudaStream_t s, const std::function<void(size_t)>& a,
            const std::function<void(size_t)>& x, const std::function<void(size_t)>& b) {
    auto first = [&](size_t k) {
      a(k);
      link(s, side, 0, k);
      x(k);
      COCCL_CUDA_CHECK(cudaEventRecord(ev[1][k % kSets], side));  // S waits for it before b(k)
    };
    first(0);
    for (size_t k = 0; k < K; ++k) {
      if (k + 1 < K) first(k + 1);
      COCCL_CUDA_CHECK(cudaStreamWaitEvent(s, ev[1][k % kSets], 0));
      b(k);
    }
  }

  // Five stages of the two-shot AllReduce.
  void run5(size_t K, cudaStream_t s, const std::function<void(size_t)>& enc,
            const std::function<void(size_t)>& x1, const std::function<void(size_t)>& red,
            const std::function<void(size_t)>& x2, const std::function<void(size_t)>& dec) {
    auto first = [&](size_t k) {
      enc(k);
      link(s, side, 0, k);
      x1(k);
      COCCL_CUDA_CHECK(cudaEventRecord(ev[1][k % kSets], side));
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
  }
};

StagedCodec::StagedCodec(int nranks, int rank, size_t slotBytes, ByteMover& mover,
                         const char* algoSuffix)
    : impl_(std::make_unique<Impl>(nranks, rank, slotBytes, mover)) {
  Impl& m = *impl_;
  m.arName = std::string("two-shot/") + algoSuffix;
  m.directName = std::string("direct/") + algoSuffix;
  const size_t slots = kSets * (3 * static_cast<size_t>(nranks) + 1);
  void* st = nullptr;
  COCCL_CUDA_CHECK(cudaMalloc(&st, slots * slotBytes));
  m.staging = static_cast<char*>(st);
  void* a = nullptr;
  COCCL_CUDA_CHECK(cudaMalloc(&a, 4 * slotBytes));
  m.acc = static_cast<float*>(a);
  COCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&m.side, cudaStreamNonBlocking));
  for (auto& row : m.ev)
    for (cudaEvent_t& e : row) COCCL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  COCCL_CUDA_CHECK(cudaEventCreateWithFlags(&m.tail, cudaEventDisableTiming));
}

StagedCodec::~StagedCodec() = default;

size_t StagedCodec::stagingBytes() const {
  const Impl& m = *impl_;
  return (kSets * (3 * static_cast<size_t>(m.p) + 1) + 4) * m.slotBytes;
}

cudaStream_t StagedCodec::sideStream() const { return impl_->side; }

bool StagedCodec::supports(const CollRequest& r) const {
  const Impl& m = *impl_;
  if (r.mem != MemKind::Device || !r.codec || !r.codec->hasDeviceOps()) return false;
  const bool reduces = r.coll == Coll::AllReduce || r.coll == Coll::ReduceScatter;
  if (!reduces && r.coll != Coll::AllGather) return false;
  return r.codec->blockElems() <= m.slotBytes && !(reduces && m.p > kernels::kMaxReduceInputs);
}

void StagedCodec::run(const CollRequest& r, CollStats& stats) {
  Impl& m = *impl_;
  switch (r.coll) {
    case Coll::AllReduce: return m.allReduce(r, stats);
    case Coll::ReduceScatter: return m.reduceScatter(r, stats);
    case Coll::AllGather: return m.allGather(r, stats);
    default: COCCL_THROW(cocclInternalError, "staged codec pipeline: %s", collName(r.coll));
  }
}

// ---- collectives ------------------------------------------------------------------------------

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
  const size_t piece = m.pieceElems(*codec, dt);
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
        });
  });
}

StagedCodec::Impl::Direct StagedCodec::Impl::direct(const CollRequest& r, CollStats& stats) {
  Direct d{};
  d.count = r.count;
  d.es = dtypeSize(r.dt);
  stats.wireBytesSent = directWireBytes(r.codec->encodedBytes(r.count, r.dt), p);
  stats.algorithm = directName.c_str();
  d.piece = pieceElems(*r.codec, r.dt);
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
        });
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
  // with the mover's allGather: rank j's payload of piece k at slot(k, kGath, 0) + j * stride
  const bool ag = m.mover.hasAllGather();
  auto stride = [&](size_t k) { return m.gatherStride(pb(n(k))); };
  auto mine = [&](size_t k) {
    return ag ? m.slot(k, kGath, 0) + static_cast<size_t>(me) * stride(k) : m.slot(k, kSend, me);
  };
  auto theirs = [&](size_t k, int j) {
    return ag ? m.slot(k, kGath, 0) + static_cast<size_t>(j) * stride(k)
              : j == me ? m.slot(k, kSend, me) : m.slot(k, kRecv, j);
  };
  if (ag) {
    stats.wireBytesSent = 0;
    for (size_t k = 0; k < d.K; ++k) stats.wireBytesSent += static_cast<size_t>(p - 1) * stride(k);
  }
  cudaStream_t s = d.s;
  void* ws = d.ws;
  m.pipeline(s, [&] {
    m.run3(
        d.K, s,
        [&](size_t k) {  // encode my piece once
          codec->deviceEncode(static_cast<const char*>(in) + k * piece * es, dt, n(k), mine(k), ws,
                              s);
        },
        [&](size_t k) {  // my encoded piece to everyone; theirs to me
          if (ag) {
            m.mover.allGather(mine(k), theirs(k, 0), stride(k), m.side);
            return;
          }
          auto bytes = [&](int) { return pb(n(k)); };
          m.exchange(k, [&](int) { return m.slot(k, kSend, me); }, bytes, kRecv, bytes);
        },
        [&](size_t k) {  // every rank decodes every shard, its own too: identical outputs
          for (int j = 0; j < p; ++j)
            codec->deviceDecode(
                theirs(k, j), n(k), dt,
                static_cast<char*>(out) + (static_cast<size_t>(j) * sendcount + k * piece) * es,
                ws, s);
        });
  });
}

}  // namespace coccl
