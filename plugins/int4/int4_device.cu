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

#include <type_traits>

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

// ---- typed runs: one 16-byte vector <-> R = 16 / sizeof(T) fp32 values -----------------------
// pack(v, nanFree): nanFree says no element is NaN (the hardware's paired conversions give a
// different NaN than Io<T>::store), which holds for everything but RAW blocks.
template <typename T>
struct RunIo;

template <>
struct RunIo<float> {
  static constexpr int R = 4;
  __device__ static void unpack(const uint4& r, float (&v)[R]) {
    v[0] = bitsf(r.x);
    v[1] = bitsf(r.y);
    v[2] = bitsf(r.z);
    v[3] = bitsf(r.w);
  }
  __device__ static uint4 pack(const float (&v)[R], bool) {
    return make_uint4(fbits(v[0]), fbits(v[1]), fbits(v[2]), fbits(v[3]));
  }
};

template <typename T, typename Pair>
struct RunIo16 {
  static constexpr int R = 8;
  __device__ static uint32_t pair(float lo, float hi, bool nanFree) {
    if (nanFree) return Pair::pack(lo, hi);
    return static_cast<uint32_t>(Io<T>::store(lo).v) |
           (static_cast<uint32_t>(Io<T>::store(hi).v) << 16);
  }
  __device__ static void unpack(const uint4& r, float (&v)[R]) {
    Pair::unpack(r.x, v[0], v[1]);
    Pair::unpack(r.y, v[2], v[3]);
    Pair::unpack(r.z, v[4], v[5]);
    Pair::unpack(r.w, v[6], v[7]);
  }
  __device__ static uint4 pack(const float (&v)[R], bool nanFree) {
    return make_uint4(pair(v[0], v[1], nanFree), pair(v[2], v[3], nanFree),
                      pair(v[4], v[5], nanFree), pair(v[6], v[7], nanFree));
  }
};

struct Bf16Pair {
  __device__ static void unpack(uint32_t w, float& lo, float& hi) {
    lo = bitsf(w << 16);
    hi = bitsf(w & 0xffff0000u);
  }
  __device__ static uint32_t pack(float lo, float hi) {  // cvt.rn.bf16x2.f32
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

struct HalfPair {
  __device__ static void unpack(uint32_t w, float& lo, float& hi) {  // exact widening
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w));
    lo = f.x;
    hi = f.y;
  }
  __device__ static uint32_t pack(float lo, float hi) {  // cvt.rn.f16x2.f32
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

template <>
struct RunIo<Bf16> : RunIo16<Bf16, Bf16Pair> {};
template <>
struct RunIo<Half> : RunIo16<Half, HalfPair> {};

// The lane's tile::LaneStats from its 16-bit words as loaded. |x| as a 16-bit integer (the sign
// cleared) orders as the values do, NaN above +-Inf, and is 0 exactly where x is +-0; the 16x2
// integer min and max (VIMNMX.U16x2 on sm_90) take two elements an instruction: about 1.5
// instructions an element for both figures, where the fp32 values' forms take 5.
template <typename T, int J>
__device__ __forceinline__ tile::LaneStats laneStats16(const uint4 (&r)[J]) {
  uint32_t m = 0, n = 0;  // n: a count a half (at most 4 J each: no carry)
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const uint32_t w[4] = {r[j].x, r[j].y, r[j].z, r[j].w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t t = w[i] & 0x7fff7fffu;
      m = __vmaxu2(m, t);
      n += __vminu2(t, 0x00010001u);
    }
  }
  const uint32_t h = max(m & 0xffffu, m >> 16);
  uint32_t amax;  // exact for finite values; a NaN's bits stay above 0x7f800000
  if constexpr (std::is_same<T, Bf16>::value)
    amax = h << 16;
  else
    amax = fbits(__half2float(__ushort_as_half(static_cast<unsigned short>(h))));
  return tile::LaneStats{amax, (n & 0xffffu) + (n >> 16)};
}

// The tile shape of blocks of G elements of T.
template <typename T, int G, bool Wide = false>
using ShapeOf = Shape<G, RunIo<T>::R, Wide>;

// The lane's vectors of the block at element `base` (whole block inside, 16-byte aligned).
template <typename T, class Sh>
__device__ __forceinline__ void loadVec(const T* in, size_t base, int k, uint4 (&r)[Sh::J]) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j)
    r[j] = __ldg(reinterpret_cast<const uint4*>(in + base + Sh::runStart(j, k)));
}

// The same from the lane's first element p (= in + base + k R): the runs at fixed offsets.
template <class Sh, typename T>
__device__ __forceinline__ void loadVecAt(const T* p, uint4 (&r)[Sh::J]) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j)
    r[j] = __ldg(reinterpret_cast<const uint4*>(p + Sh::runStart(j, 0)));
}

template <typename T, class Sh>
__device__ __forceinline__ void unpackVec(const uint4 (&r)[Sh::J], float (&x)[Sh::J][Sh::R]) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) RunIo<T>::unpack(r[j], x[j]);
}

// Element by element, +0 at and past count (Io<T>::load: the host's conversions).
template <typename T, class Sh>
__device__ __forceinline__ void loadScalar(const T* in, size_t count, size_t base, int k,
                                           float (&x)[Sh::J][Sh::R]) {
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) {
    const size_t i0 = base + Sh::runStart(j, k);
#pragma unroll
    for (int e = 0; e < Sh::R; ++e) x[j][e] = i0 + e < count ? Io<T>::load(in[i0 + e]) : 0.0f;
  }
}

// Loads the lane's part of the block at `base`: vectors where the block is whole and in is
// 16-byte aligned (vec), else scalars.
template <typename T, class Sh>
__device__ __forceinline__ void loadRun(const T* in, size_t count, size_t base, int k, bool vec,
                                        float (&x)[Sh::J][Sh::R]) {
  if (vec && base + Sh::G <= count) {
    uint4 r[Sh::J];
    loadVec<T, Sh>(in, base, k, r);
    unpackVec<T, Sh>(r, x);
  } else {
    loadScalar<T, Sh>(in, count, base, k, x);
  }
}

// Stream: an output that nothing in the operation reads again (decode, the owner step's decoded
// copy) is stored with st.global.cs (evict first): plain-mode decode of 256 MiB bf16 0.118 ->
// 0.104 ms on one H200; the accumulator, read again by the next accumulate, keeps plain stores.
template <typename T, class Sh, bool Stream>
__device__ __forceinline__ void storeRun(T* out, size_t count, size_t base, int k, bool vec,
                                         bool nanFree, const float (&v)[Sh::J][Sh::R]) {
  if (vec && base + Sh::G <= count) {
#pragma unroll
    for (int j = 0; j < Sh::J; ++j) {
      uint4* dst = reinterpret_cast<uint4*>(out + base + Sh::runStart(j, k));
      if constexpr (Stream)
        __stcs(dst, RunIo<T>::pack(v[j], nanFree));
      else
        *dst = RunIo<T>::pack(v[j], nanFree);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) {
    const size_t i0 = base + Sh::runStart(j, k);
#pragma unroll
    for (int e = 0; e < Sh::R; ++e)
      if (i0 + e < count) out[i0 + e] = Io<T>::store(v[j][e]);
  }
}

// The lane's code words of block b (R / 2 bytes each) and the block's scale word.
template <class Sh>
__device__ __forceinline__ uint32_t loadCodes(const uint8_t* payload, size_t nb, size_t b, int k,
                                              uint32_t (&q)[Sh::J]) {
  const uint8_t* codes = payload + b * (Sh::G / 2);
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) {
    const uint8_t* c = codes + Sh::runStart(j, k) / 2;
    if constexpr (Sh::R == 8)
      q[j] = __ldg(reinterpret_cast<const uint32_t*>(c));
    else
      q[j] = __ldg(reinterpret_cast<const unsigned short*>(c));
  }
  return __ldg(reinterpret_cast<const uint32_t*>(payload + nb * (Sh::G / 2)) + b);
}

template <class Sh>
__device__ __forceinline__ void storeCodes(uint8_t* payload, size_t nb, size_t b, int k,
                                           const uint32_t (&q)[Sh::J], uint32_t word) {
  uint8_t* codes = payload + b * (Sh::G / 2);
#pragma unroll
  for (int j = 0; j < Sh::J; ++j) {
    uint8_t* c = codes + Sh::runStart(j, k) / 2;
    if constexpr (Sh::R == 8)
      *reinterpret_cast<uint32_t*>(c) = q[j];
    else
      *reinterpret_cast<uint16_t*>(c) = static_cast<uint16_t>(q[j]);
  }
  if (k == 0) reinterpret_cast<uint32_t*>(payload + nb * (Sh::G / 2))[b] = word;
}

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
    if (b < nb) {
#pragma unroll
      for (int j = 0; j < J; ++j) {
        uint8_t* c = dst + Sh::runStart(j, 0) / 2;
        if constexpr (R == 8)
          *reinterpret_cast<uint32_t*>(c) = q[j];
        else
          *reinterpret_cast<uint16_t*>(c) = static_cast<uint16_t>(q[j]);
      }
      if (k == 0) scales[b] = word;
    }
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
