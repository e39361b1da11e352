// cocclAllGatherDelta on the host executor (include/coccl.h, delta_header.h): the header
// exchange every call starts with (whatever its buffers), and the difference mode on host
// buffers. The exact mode (reset, or no codec) is a plain AllGather (HostExecutor::run).
//
// Difference mode, rank me, shard n = sendcount elements, out_j = recvbuff + j n:
//   in chunks k of chunkElems(COCCL_CHUNK_BYTES, sizeof(T), block) elements (the device path
//   cuts the same pieces; the direct AllGather may cut smaller ones, pipelineChunkElems):
//   post(k):   d = fp32(in) - fp32(out_me) (kernels/delta_math.h), payload = encode(d as fp32),
//              sent to every peer; receives of every peer's chunk-k payload posted; then the
//              own payload is decoded and added to out_me like every other rank will
//   finish(k): for every peer j in rank order: out_j = T(out_j + decode(payload_j))
// Chunk k+1 is posted before chunk k's receives are waited for (two slots).
#include <cstring>
#include <memory>
#include <vector>

#include "codecs/codec.h"
#include "collectives/host/host_executor.h"
#include "collectives/layout.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/delta_math.h"

namespace coccl {
namespace {

constexpr uint64_t kDeltaSub = 1;  // sub-tags: 0 headers, 1 + k payloads of chunk k
constexpr uint64_t kChunkMask = (uint64_t{1} << 23) - 1;

template <class Fn>
void dispatchDelta(cocclDataType_t dt, Fn&& fn) {
  switch (dt) {
    case cocclFloat32:
      fn(std::integral_constant<int, cocclFloat32>{});
      break;
    case cocclFloat16:
      fn(std::integral_constant<int, cocclFloat16>{});
      break;
    case cocclBfloat16:
      fn(std::integral_constant<int, cocclBfloat16>{});
      break;
    default:
      COCCL_THROW(cocclInternalError, "AllGatherDelta: difference mode on %s", dtypeName(dt));
  }
}

// d[i] = next[i] - prev[i] in fp32 (restrict: the loops vectorize).
template <int T>
void diffLoop(const void* __restrict next, const void* __restrict prev, size_t n,
              float* __restrict d) {
  for (size_t i = 0; i < n; ++i) d[i] = kmath::deltaDiff<T>(next, prev, i);
}
void diffToFloat(const void* next, const void* prev, cocclDataType_t dt, size_t n, float* d) {
  dispatchDelta(dt, [&](auto t) { diffLoop<decltype(t)::value>(next, prev, n, d); });
}

// out[i] = T(out[i] + dec[i]).
template <int T>
void applyLoop(void* __restrict out, const float* __restrict dec, size_t n) {
  for (size_t i = 0; i < n; ++i) kmath::deltaApply<T>(out, i, dec[i]);
}
void applyFloat(void* out, const float* dec, cocclDataType_t dt, size_t n) {
  dispatchDelta(dt, [&](auto t) { applyLoop<decltype(t)::value>(out, dec, n); });
}

}  // namespace

std::vector<DeltaHeader> HostExecutor::exchangeDeltaHeaders(const DeltaHeader& mine) {
  const int p = nranks(), me = rank();
  std::vector<DeltaHeader> all(static_cast<size_t>(p));
  all[static_cast<size_t>(me)] = mine;
  if (p == 1) return all;
  const uint64_t tag = nextCollectiveTag();
  std::vector<RequestPtr> reqs;
  for (int j = 0; j < p; ++j)
    if (j != me)
      reqs.push_back(transport_->irecv(j, tag, &all[static_cast<size_t>(j)], kDeltaHeaderBytes));
  for (int d = 1; d < p; ++d)
    reqs.push_back(
        transport_->isend((me + d) % p, tag, &all[static_cast<size_t>(me)], kDeltaHeaderBytes));
  waiter_->waitAll(reqs, "AllGatherDelta header exchange");
  return all;
}

void HostExecutor::runAllGatherDelta(const CollRequest& r, CollStats& stats) {
  stats_ = &stats;
  stats.wireBytesSent = 0;
  stats.algorithm = "delta/direct";
  const Codec& codec = *r.codec;
  const int p = nranks(), me = rank();
  const cocclDataType_t dt = r.dt;
  const size_t count = r.count, es = dtypeSize(dt);
  const size_t chunk =
      chunkElemsFor(static_cast<size_t>(config().chunkBytes), es, codec.blockElems(), count);
  const size_t K = numChunks(count, chunk);
  if (K == 0) return;
  const uint64_t tag = nextCollectiveTag();
  const auto* in = static_cast<const char*>(r.in);
  auto* out = static_cast<char*>(r.out);
  char* myOut = out + static_cast<size_t>(me) * count * es;
  const Range whole{0, count};
  PoolBuffer fBuf = pool_.get(chunk * sizeof(float));  // differences / decoded values
  float* f = fBuf.as<float>();
  size_t wireSent = 0;
  auto sub = [&](size_t k) { return tag | ((kDeltaSub + static_cast<uint64_t>(k)) & kChunkMask); };

  struct Slot {
    std::vector<PoolBuffer> inBuf;
    std::vector<RequestPtr> reqs;
    PoolBuffer enc;
  };
  Slot slots[2];
  auto post = [&](size_t k) {
    Slot& s = slots[k % 2];
    const Range c = chunkOf(whole, chunk, k);
    const size_t b = codec.encodedBytes(c.count, cocclFloat32);
    s.inBuf.resize(static_cast<size_t>(p));
    s.reqs.clear();
    for (int j = 0; j < p; ++j) {
      if (j == me) continue;
      s.inBuf[static_cast<size_t>(j)] = pool_.get(b);
      s.reqs.push_back(transport_->irecv(j, sub(k), s.inBuf[static_cast<size_t>(j)].data(), b));
    }
    char* mine = myOut + c.begin * es;
    diffToFloat(in + c.begin * es, mine, dt, c.count, f);
    s.enc = pool_.get(b);
    codec.encode(f, cocclFloat32, c.count, s.enc.data());
    for (int d = 1; d < p; ++d) {
      s.reqs.push_back(transport_->isend((me + d) % p, sub(k), s.enc.data(), b));
      wireSent += b;
    }
    // The own shard takes the decoded payload, exactly as every peer adds it.
    codec.decode(s.enc.data(), c.count, cocclFloat32, f);
    applyFloat(mine, f, dt, c.count);
  };
  auto finish = [&](size_t k) {
    Slot& s = slots[k % 2];
    const Range c = chunkOf(whole, chunk, k);
    waiter_->waitAll(s.reqs, "AllGatherDelta transfers");
    s.reqs.clear();
    s.enc.release();
    for (int j = 0; j < p; ++j) {
      if (j == me) continue;
      codec.decode(s.inBuf[static_cast<size_t>(j)].data(), c.count, cocclFloat32, f);
      applyFloat(out + (static_cast<size_t>(j) * count + c.begin) * es, f, dt, c.count);
      s.inBuf[static_cast<size_t>(j)].release();
    }
  };
  for (size_t k = 0; k < K; ++k) {
    post(k);
    if (k > 0) finish(k - 1);
  }
  finish(K - 1);
  stats.wireBytesSent += wireSent;
}

}  // namespace coccl
