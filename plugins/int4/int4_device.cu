// int4 codec: the device operations of the plug-in ABI. Each kernel is a grid-stride loop in
// which a warp takes 32 / L blocks at a time in int4_tile.cuh's layout (runs of 8 elements,
// 16-byte vector loads and stores, one 32-bit code word a run), sized to the resident grid.
// Encode and decode fetch the next tile's input while the current one is computed (one tile
// of registers ahead); decodeAccumulate and decodeReduceEncode fetch the next input's code
// words while decoding the current one. Partial last blocks and unaligned typed buffers take
// scalar loads and stores with the host's zero padding. Payloads must be 4-byte aligned.
// Compiled with --fmad=false; the bytes are the host's (int4_block_host.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>  // std::is_same (int4_runs.cuh)

#include "int4_device.h"
#include "int4_math.h"
#include "int4_params.h"
#include "int4_tile.cuh"

namespace int4c {
namespace {

using tile::Shape;

constexpr int kWarpsPerCta = 4;
constexpr int kThreads = 32 * kWarpsPerCta;

struct Ins {
  const uint8_t* p[64];
};

#include "int4_runs.cuh"  // RunIo, ShapeOf, loads and stores of runs and code words

__device__ __forceinline__ size_t warpId() {
  return (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32u;
}
__device__ __forceinline__ size_t warpCount() {
  return static_cast<size_t>(gridDim.x) * blockDim.x / 32u;
}
__device__ __forceinline__ int laneId() {
  return static_cast<int>(threadIdx.x & 31u);
}

// ---- kernels ---------------------------------------------------------------------------------
// A warp's iteration w holds blocks [w * BPW, (w + 1) * BPW); the loop bounds are warp-uniform
// (every lane takes part in the shuffles); lanes past the last block compute on zeros and store
// nothing.

// CTAs a multiprocessor that encode is compiled for, up to G = 1024 (G = 2048, 64 elements a
// lane, would spill): 16-bit types 4 (16 warps, at most 128 registers, no spill at G = 128;
// 1.2x faster than at 138 registers and 3 CTAs; at 5 CTAs, 96 registers, 100 bytes spill and
// the bf16 encode takes 1.5x as long: perf/RESULTS.md, 2026-12-07), fp32 6 (80 registers).
template <typename T, int G>
constexpr int encodeMinCtas() {
  return G > 1024 ? 1 : (sizeof(T) == 4 ? 6 : 4);
}

template <typename T, int G>
__global__ void __launch_bounds__(kThreads, encodeMinCtas<T, G>())
    encodeKernel(Params p, const T* in, size_t count, uint8_t* out) {
  using Sh = ShapeOf<T, G, true>;
  constexpr int J = Sh::J, R = Sh::R;
  const size_t nb = numBlocks(p, count), groups = (nb + Sh::BPW - 1) / Sh::BPW;
  const bool vec = (reinterpret_cast<uintptr_t>(in) & 15u) == 0;
  const int k = laneId() % Sh::L, slot = laneId() / Sh::L;
  const size_t stride = warpCount();
  size_t w = warpId();
  if (w >= groups) return;
  // the lane's first element and code byte step by a warp iteration's blocks (immediate offsets
  // for the runs: no 64-bit address arithmetic a run)
  const size_t step = stride * Sh::BPW, nFull = vec ? count / G : 0;  // blocks wholly inside
  size_t b = w * Sh::BPW + static_cast<size_t>(slot);
  const T* src = in + b * G + k * R;
  uint8_t* dst = out + b * (G / 2) + k * (R / 2);
  uint32_t* scales = reinterpret_cast<uint32_t*>(out + nb * (G / 2));
  bool full = b < nFull;
  uint4 r[J];
  if (full) loadVecAt<Sh>(src, r);
  constexpr bool kPairs = R == 8;  // 16-bit inputs: the lane's statistics from the words
  for (;;) {
    float x[J][R], y[J][R];
    tile::LaneStats st;
    if (full) {
      unpackVec<T, Sh>(r, x);
      if constexpr (kPairs)
        st = laneStats16<T, J>(r);
      else
        st = tile::laneStats<R, J, false>(x);
    } else {
      loadScalar<T, Sh>(in, count, b * G, k, x);
      st = tile::laneStats<R, J, kPairs>(x);
    }
    const size_t bn = b + step;
    const bool more = w + stride < groups, fulln = bn < nFull;  // fulln implies more
    src += step * G;
    if (fulln) loadVecAt<Sh>(src, r);  // in flight while this tile is encoded
    uint32_t q[J];
    const uint32_t word = tile::encode<Sh, kPairs>(p, x, y, b, k, st, q);
    if (b < nb) storeCodesAt<Sh>(dst, scales, b, k, q, word);
    if (!more) break;
    w += stride;
    b = bn;
    dst += step * (G / 2);
    full = fulln;
  }
}

template <typename T, int G>
__global__ void __launch_bounds__(kThreads)
    decodeKernel(Params p, const uint8_t* in, size_t count, T* out) {
  using Sh = ShapeOf<T, G>;
  constexpr int J = Sh::J, R = Sh::R;
  const size_t nb = numBlocks(p, count), groups = (nb + Sh::BPW - 1) / Sh::BPW;
  const bool vec = (reinterpret_cast<uintptr_t>(out) & 15u) == 0;
  const int k = laneId() % Sh::L, slot = laneId() / Sh::L;
  const size_t stride = warpCount();
  size_t w = warpId();
  if (w >= groups) return;
  size_t b = w * Sh::BPW + static_cast<size_t>(slot);
  uint32_t q[J];
  uint32_t word = loadCodes<Sh>(in, nb, b < nb ? b : 0, k, q);  // a dead slot reads block 0
  for (;;) {
    uint32_t qc[J];
#pragma unroll
    for (int j = 0; j < J; ++j) qc[j] = q[j];
    const uint32_t wc = word;
    const size_t wn = w + stride, bn = wn * Sh::BPW + static_cast<size_t>(slot);
    const bool more = wn < groups;
    if (more) word = loadCodes<Sh>(in, nb, bn < nb ? bn : 0, k, q);
    float v[J][R];
    tile::decode<Sh>(qc, wc, k, v);
    if (b < nb) storeRun<T, Sh, true>(out, count, b * G, k, vec, (wc & kRawBit) == 0u, v);
    if (!more) break;
    w = wn;
    b = bn;
  }
}

// a (+)= the decodes of inputs [first, last) of block bb, in input order (a = the first one's
// when assignFirst); one input's code words are loaded ahead of the decode.
template <class Sh>
__device__ __forceinline__ void accumulateInputs(const Ins& ins, int first, int last, size_t nb,
                                                 size_t bb, int k, float (&a)[Sh::J][Sh::R],
                                                 bool assignFirst) {
  constexpr int J = Sh::J, R = Sh::R;
  if (first >= last) return;
  uint32_t q[J];
  uint32_t word = loadCodes<Sh>(ins.p[first], nb, bb, k, q);
  for (int r = first; r < last; ++r) {
    uint32_t qc[J];
#pragma unroll
    for (int j = 0; j < J; ++j) qc[j] = q[j];
    const uint32_t wc = word;
    if (r + 1 < last) word = loadCodes<Sh>(ins.p[r + 1], nb, bb, k, q);
    float v[J][R];
    tile::decode<Sh>(qc, wc, k, v);
    const bool assign = assignFirst && r == first;
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < R; ++e) a[j][e] = assign ? v[j][e] : addRn(a[j][e], v[j][e]);
  }
}

template <int G>
__global__ void __launch_bounds__(kThreads)
    accumulateKernel(Params p, Ins ins, int n, size_t count, float* acc) {
  using Sh = ShapeOf<float, G>;
  constexpr int J = Sh::J, R = Sh::R;
  const size_t nb = numBlocks(p, count), groups = (nb + Sh::BPW - 1) / Sh::BPW;
  const bool vec = (reinterpret_cast<uintptr_t>(acc) & 15u) == 0;
  const int k = laneId() % Sh::L, slot = laneId() / Sh::L;
  for (size_t w = warpId(); w < groups; w += warpCount()) {
    const size_t b = w * Sh::BPW + static_cast<size_t>(slot);
    const bool live = b < nb;
    float a[J][R];
    loadRun<float, Sh>(acc, live ? count : 0, b * G, k, vec, a);
    accumulateInputs<Sh>(ins, 0, n, nb, live ? b : 0, k, a, false);
    // addAcc's quiet NaN, once: a NaN sum stays NaN through every later add
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < R; ++e) a[j][e] = a[j][e] != a[j][e] ? bitsf(0x7fc00000u) : a[j][e];
    if (live) storeRun<float, Sh, false>(acc, count, b * G, k, vec, true, a);
  }
}

// The owner step at 4 CTAs a multiprocessor up to G = 1024 (at most 128 registers; about 270
// bytes spilled, and still 1.04-1.18x faster than at 151-168 registers and 3 CTAs).
template <typename T, int G>
__global__ void __launch_bounds__(kThreads, G <= 1024 ? 4 : 1)
    dreKernel(Params p, Ins ins, int np, int self, const T* selfIn, size_t count, float scale,
              uint8_t* out, T* decoded) {
  using Sh = ShapeOf<T, G>;
  constexpr int J = Sh::J, R = Sh::R;
  const size_t nb = numBlocks(p, count), groups = (nb + Sh::BPW - 1) / Sh::BPW;
  const bool vecIn = (reinterpret_cast<uintptr_t>(selfIn) & 15u) == 0;
  const bool vecDec = (reinterpret_cast<uintptr_t>(decoded) & 15u) == 0;
  const int k = laneId() % Sh::L, slot = laneId() / Sh::L;
  for (size_t w = warpId(); w < groups; w += warpCount()) {
    const size_t b = w * Sh::BPW + static_cast<size_t>(slot);
    const bool live = b < nb;
    const size_t bb = live ? b : 0, base = b * G;
    float a[J][R], y[J][R];
    // the sum in input order: inputs before self, self's raw input, the rest (host order)
    accumulateInputs<Sh>(ins, 0, self, nb, bb, k, a, true);
    float s[J][R];
    loadRun<T, Sh>(selfIn, live ? count : 0, base, k, vecIn, s);
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < R; ++e) a[j][e] = self == 0 ? s[j][e] : addRn(a[j][e], s[j][e]);
    accumulateInputs<Sh>(ins, self + 1, np, nb, bb, k, a, false);
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const size_t i0 = base + Sh::runStart(j, k);
#pragma unroll
      for (int e = 0; e < R; ++e) {
        const float t = scale != 1.0f ? mulRn(a[j][e], scale) : a[j][e];
        a[j][e] =
            live && i0 + e < count ? t : 0.0f;  // the fp32 sum, not rounded to T (as the host)
      }
    }
    uint32_t q[J];
    const uint32_t word =
        tile::encode<Sh, false>(p, a, y, bb, k, tile::laneStats<R, J, false>(a), q);
    if (live) storeCodes<Sh>(out, nb, b, k, q, word);
    if (decoded != nullptr) {  // from the codes in registers: the bytes just written
      tile::decode<Sh>(q, word, k, a);
      if (live) storeRun<T, Sh, true>(decoded, count, base, k, vecDec, (word & kRawBit) == 0u, a);
    }
  }
}

const Params& P(const void* inst) {
  return static_cast<const Instance*>(inst)->p;
}

// Warps for the message (one iteration each), at most the resident grid (the grid-stride loops
// cover the rest): occupancy of the kernel times the current device's multiprocessors.
template <auto Kernel>
dim3 gridFor(size_t groups) {
  static const int perSm = [] {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, kThreads, 0) != cudaSuccess ||
        n < 1)
      n = 1;
    return n;
  }();
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
    sms = 1;
  const size_t need = (groups + kWarpsPerCta - 1) / kWarpsPerCta;
  const size_t cap = static_cast<size_t>(perSm) * static_cast<size_t>(sms);
  return dim3(static_cast<unsigned>(need < 1 ? 1 : (need < cap ? need : cap)));
}

template <class Sh>
size_t groupsOf(const Params& p, size_t count) {
  return (numBlocks(p, count) + Sh::BPW - 1) / Sh::BPW;
}

bool okDtype(int dt) {
  return dt == cocclFloat32 || dt == cocclFloat16 || dt == cocclBfloat16;
}

bool aligned4(const void* q) {
  return (reinterpret_cast<uintptr_t>(q) & 3u) == 0;
}

int launched() {
  return cudaGetLastError() == cudaSuccess ? COCCL_CODEC_OK : COCCL_CODEC_E_CUDA;
}

// Calls f(GTag<G>{}) for the instance's block size.
template <int G>
struct GTag {
  static constexpr int value = G;
};

template <typename F>
int withG(const Params& p, F&& f) {
  switch (p.block) {
    case 32:
      return f(GTag<32>{});
    case 64:
      return f(GTag<64>{});
    case 128:
      return f(GTag<128>{});
    case 256:
      return f(GTag<256>{});
    case 512:
      return f(GTag<512>{});
    case 1024:
      return f(GTag<1024>{});
    case 2048:
      return f(GTag<2048>{});
    default:
      return COCCL_CODEC_E_INVALID;
  }
}

template <typename F>
int withT(int dt, F&& f) {
  if (dt == cocclFloat32) return f(float{});
  if (dt == cocclFloat16) return f(Half{});
  return f(Bf16{});
}

// The inputs, all but `skip`; false if one the kernel reads is not 4-byte aligned.
bool toIns(const void* const* ins, int n, int skip, Ins& s) {
  s = Ins{};
  for (int k = 0; k < n; ++k) {
    s.p[k] = k == skip ? nullptr : static_cast<const uint8_t*>(ins[k]);
    if (k != skip && !aligned4(s.p[k])) return false;
  }
  return true;
}

}  // namespace

int dEncode(const void* inst, const void* in, int dt, size_t count, void* out, void*,
            cudaStream_t stream) {
  if (!okDtype(dt) || !aligned4(out)) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  const Params& p = P(inst);
  return withT(dt, [&](auto t) {
    using T = decltype(t);
    return withG(p, [&](auto g) {
      constexpr int G = decltype(g)::value;
      encodeKernel<T, G>
          <<<gridFor<encodeKernel<T, G>>(groupsOf<ShapeOf<T, G, true>>(p, count)), kThreads, 0,
             stream>>>(p, static_cast<const T*>(in), count, static_cast<uint8_t*>(out));
      return launched();
    });
  });
}

int dDecode(const void* inst, const void* in, size_t count, int dt, void* out, void*,
            cudaStream_t stream) {
  if (!okDtype(dt) || !aligned4(in)) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  const Params& p = P(inst);
  return withT(dt, [&](auto t) {
    using T = decltype(t);
    return withG(p, [&](auto g) {
      constexpr int G = decltype(g)::value;
      decodeKernel<T, G>
          <<<gridFor<decodeKernel<T, G>>(groupsOf<ShapeOf<T, G>>(p, count)), kThreads, 0, stream>>>(
              p, static_cast<const uint8_t*>(in), count, static_cast<T*>(out));
      return launched();
    });
  });
}

int dDecodeAccumulate(const void* inst, const void* const* ins, int n, size_t count, int dt,
                      float* acc, void*, cudaStream_t stream) {
  if (!okDtype(dt) || n < 1 || n > 64) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  const Params& p = P(inst);
  Ins s;
  if (!toIns(ins, n, -1, s)) return COCCL_CODEC_E_INVALID;
  return withG(p, [&](auto g) {
    constexpr int G = decltype(g)::value;
    accumulateKernel<G><<<gridFor<accumulateKernel<G>>(groupsOf<ShapeOf<float, G>>(p, count)),
                          kThreads, 0, stream>>>(p, s, n, count, acc);
    return launched();
  });
}

int dDecodeReduceEncode(const void* inst, const void* const* ins, int np, int self,
                        const void* selfIn, int dt, size_t count, float scale, void* out,
                        void* decoded, void*, cudaStream_t stream) {
  if (!okDtype(dt) || np < 1 || np > 64 || self < 0 || self >= np || !aligned4(out))
    return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  const Params& p = P(inst);
  Ins s;
  if (!toIns(ins, np, self, s)) return COCCL_CODEC_E_INVALID;
  return withT(dt, [&](auto t) {
    using T = decltype(t);
    return withG(p, [&](auto g) {
      constexpr int G = decltype(g)::value;
      dreKernel<T, G>
          <<<gridFor<dreKernel<T, G>>(groupsOf<ShapeOf<T, G>>(p, count)), kThreads, 0, stream>>>(
              p, s, np, self, static_cast<const T*>(selfIn), count, scale,
              static_cast<uint8_t*>(out), static_cast<T*>(decoded));
      return launched();
    });
  });
}

}  // namespace int4c
