// int4 codec: device kernels. A block of G elements is held by L = min(32, G / V) lanes of a
// warp, V = 16 / sizeof(T) (8 for fp16 / bf16, 4 for fp32), each lane E = G / L contiguous
// elements in registers, loaded and stored with 16-byte vectors (scalar at a partial or
// unaligned block); a warp holds 32 / L blocks at a time and loops over the message with a grid
// stride. The rotation's stages below E run inside a lane, the stages E..S/2 across the block's
// lanes by __shfl_xor_sync (partner lane l ^ (h / E) at stage h; the lane whose bit is clear
// takes a + c, the other a - c: the host's operations on the same operands). Maxima, the
// stochastic block hash and auto mode's error sums are reductions of exact integer operations,
// so their order does not matter. Compiled with --fmad=false; the math is int4_math.h's.
#include <cuda_runtime.h>

#include "int4_device.h"
#include "int4_math.h"
#include "int4_params.h"

namespace int4c {
namespace {

constexpr int kWarpsPerCta = 8;
constexpr unsigned kFull = 0xffffffffu;

struct Ins {
  const uint8_t* p[64];
};

// The lane geometry of a block of G elements of T.
template <typename T, int G>
struct Geo {
  static constexpr int V = 16 / static_cast<int>(sizeof(T));
  static constexpr int L = G / V < 32 ? G / V : 32;  // lanes per block
  static constexpr int E = G / L;                    // elements per lane (>= 4)
  static constexpr int BPW = 32 / L;                 // blocks per warp
};

// Reductions over the L lanes of a block (xor masks below L stay inside the block's lanes).
template <int L>
__device__ __forceinline__ uint32_t groupMax(uint32_t v) {
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) {
    const uint32_t w = __shfl_xor_sync(kFull, v, o);
    v = w > v ? w : v;
  }
  return v;
}

template <int L>
__device__ __forceinline__ uint32_t groupXor(uint32_t v) {
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) v ^= __shfl_xor_sync(kFull, v, o);
  return v;
}

template <int L>
__device__ __forceinline__ uint32_t groupSum(uint32_t v) {
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// H_S on the block (li = the lane's index within its block).
template <int E, int S>
__device__ __forceinline__ void groupFwht(float (&v)[E], int li) {
#pragma unroll
  for (int h = 1; h < E && h < S; h <<= 1)
#pragma unroll
    for (int i = 0; i < E; ++i)
      if ((i & h) == 0) {
        const float a = v[i], c = v[i + h];
        v[i] = addRn(a, c);
        v[i + h] = subRn(a, c);
      }
#pragma unroll
  for (int h = E; h < S; h <<= 1) {
    const int lm = h / E;
    const bool upper = (li & lm) != 0;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float o = __shfl_xor_sync(kFull, v[i], lm);
      v[i] = upper ? subRn(o, v[i]) : addRn(v[i], o);
    }
  }
}

// Loads elements [i0, i0 + E) as fp32 (zeros at and past count).
template <typename T, int E>
__device__ __forceinline__ void loadRun(const T* in, size_t count, size_t i0, float (&x)[E]) {
  const T* src = in + i0;
  if (i0 + E <= count && (reinterpret_cast<uintptr_t>(src) & 15u) == 0) {
    T t[E];
#pragma unroll
    for (int k = 0; k < static_cast<int>(E * sizeof(T) / 16); ++k)
      reinterpret_cast<uint4*>(t)[k] = __ldg(reinterpret_cast<const uint4*>(src) + k);
#pragma unroll
    for (int i = 0; i < E; ++i) x[i] = Io<T>::load(t[i]);
    return;
  }
#pragma unroll
  for (int i = 0; i < E; ++i) x[i] = i0 + i < count ? Io<T>::load(src[i]) : 0.0f;
}

template <typename T, int E>
__device__ __forceinline__ void storeRun(T* out, size_t count, size_t i0, const float (&v)[E]) {
  T* dst = out + i0;
  if (i0 + E <= count && (reinterpret_cast<uintptr_t>(dst) & 15u) == 0) {
    T t[E];
#pragma unroll
    for (int i = 0; i < E; ++i) t[i] = Io<T>::store(v[i]);
#pragma unroll
    for (int k = 0; k < static_cast<int>(E * sizeof(T) / 16); ++k)
      reinterpret_cast<uint4*>(dst)[k] = reinterpret_cast<const uint4*>(t)[k];
    return;
  }
#pragma unroll
  for (int i = 0; i < E; ++i)
    if (i0 + i < count) dst[i] = Io<T>::store(v[i]);
}

// The lane's E / 2 code bytes at codes[0, E / 2) (E >= 4: a 2, 4 or 8k-byte aligned run).
template <int E>
__device__ __forceinline__ void storeCodes(uint8_t* codes, const int32_t (&q)[E]) {
  uint8_t t[E / 2];
#pragma unroll
  for (int i = 0; i < E / 2; ++i) t[i] = packPair(q[2 * i], q[2 * i + 1]);
  if constexpr (E / 2 >= 16) {
#pragma unroll
    for (int k = 0; k < E / 32; ++k) reinterpret_cast<uint4*>(codes)[k] = reinterpret_cast<const uint4*>(t)[k];
  } else if constexpr (E / 2 >= 4) {
#pragma unroll
    for (int k = 0; k < E / 8; ++k) reinterpret_cast<uint32_t*>(codes)[k] = reinterpret_cast<const uint32_t*>(t)[k];
  } else {
    *reinterpret_cast<uint16_t*>(codes) = *reinterpret_cast<const uint16_t*>(t);
  }
}

template <int E>
__device__ __forceinline__ void loadCodes(const uint8_t* codes, int32_t (&q)[E]) {
  uint8_t t[E / 2];
  if constexpr (E / 2 >= 16) {
#pragma unroll
    for (int k = 0; k < E / 32; ++k) reinterpret_cast<uint4*>(t)[k] = __ldg(reinterpret_cast<const uint4*>(codes) + k);
  } else if constexpr (E / 2 >= 4) {
#pragma unroll
    for (int k = 0; k < E / 8; ++k) reinterpret_cast<uint32_t*>(t)[k] = __ldg(reinterpret_cast<const uint32_t*>(codes) + k);
  } else {
    *reinterpret_cast<uint16_t*>(t) = __ldg(reinterpret_cast<const unsigned short*>(codes));
  }
#pragma unroll
  for (int i = 0; i < E; ++i) q[i] = nibble(t[i / 2], i & 1);
}

// Encodes the block from x (fp32, padded; the lane's run starts at element li * E of block b);
// writes the lane's codes into `codes` (the run's bytes) and returns the block's word.
template <int G, int E, int L>
__device__ __forceinline__ uint32_t groupEncode(const Params& p, const float (&x)[E], size_t b,
                                                int li, bool live, uint8_t* codes) {
  constexpr int S = G < 128 ? G : 128;
  uint32_t amax = 0, fmaxb = 0;
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const uint32_t a = fbits(x[i]) & 0x7fffffffu;
    amax = a > amax ? a : amax;
    if (a < 0x7f800000u) fmaxb = a > fmaxb ? a : fmaxb;
  }
  amax = groupMax<L>(amax);
  fmaxb = groupMax<L>(fmaxb);
  // The shuffles below run on every lane of the warp (its blocks may take different paths):
  // conditions are per block, the collective steps under warp votes.
  float y[E];
  float m = 0.0f;
  const bool mayRotate = p.mode != kModePlain && amax < 0x7f800000u;
  if (__any_sync(kFull, mayRotate)) {
#pragma unroll
    for (int i = 0; i < E; ++i) y[i] = x[i];
    groupFwht<E, S>(y, li);
    uint32_t mb = 0;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const uint32_t a = fbits(y[i]) & 0x7fffffffu;
      mb = a > mb ? a : mb;
    }
    mb = groupMax<L>(mb);
    m = mayRotate ? bitsf(mb) : 0.0f;
  }
  BlockPlan plan = planBlock(amax, bitsf(fmaxb), m, p.mode, S);
  const bool compare = p.mode == kModeAuto && plan.rotated;
  if (__any_sync(kFull, compare)) {
    const BlockPlan plain = planBlock(amax, bitsf(fmaxb), m, kModePlain, S);
    uint32_t eu = 0, er = 0;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      eu += sqErrFixed(mulRn(x[i], plain.inv));
      er += sqErrFixed(mulRn(y[i], plan.inv));
    }
    eu = groupSum<L>(eu);
    er = groupSum<L>(er);
    if (compare && !autoRotates(er, eu, plan.word, plain.word, S)) plan = plain;
  }
  uint32_t bh = 0;
  if (p.stochastic) {  // uniform over the warp
#pragma unroll
    for (int i = 0; i < E; ++i) bh ^= elemHashTerm(fbits(x[i]), static_cast<uint32_t>(li * E + i));
    bh = groupXor<L>(bh);
  }
  int32_t q[E];
  if (plan.raw) {
#pragma unroll
    for (int i = 0; i < E; ++i) q[i] = rawCode(x[i], plan.inv);
  } else {
    const uint64_t e0 = static_cast<uint64_t>(b) * G + static_cast<uint64_t>(li) * E;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float v = plan.rotated ? y[i] : x[i];
      const uint32_t h = p.stochastic ? int4Hash(p.seed, e0 + i, bh) : 0u;
      q[i] = quant(mulRn(v, plan.inv), p.stochastic, h);
    }
  }
  if (live) storeCodes<E>(codes, q);
  return plan.word;
}

// Decodes the lane's run of its block (codes = the run's bytes) into v (fp32).
template <int G, int E>
__device__ __forceinline__ void groupDecode(const uint8_t* codes, uint32_t word, int li,
                                            float (&v)[E]) {
  constexpr int S = G < 128 ? G : 128;
  int32_t q[E];
  loadCodes<E>(codes, q);
  const bool raw = (word & kRawBit) != 0u;
  const bool rot = !raw && (word & kPlainFlag) == 0u;
  float z[E];
#pragma unroll
  for (int i = 0; i < E; ++i) z[i] = static_cast<float>(q[i]);
  if (__any_sync(kFull, rot)) groupFwht<E, S>(z, li);  // every lane (shuffles), used where rot
  if (raw) {
    const float r = bitsf(word & 0x7fffffffu);
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = rawDecode(q[i], r);
  } else {
    const float c = bitsf(word);
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = mulRn(rot ? z[i] : static_cast<float>(q[i]), c);
  }
}

__device__ __forceinline__ uint32_t loadWord(const uint8_t* scales, size_t b) {
  return __ldg(reinterpret_cast<const uint32_t*>(scales) + b);
}

// Grid-stride iteration: warp w handles blocks [w * BPW, (w + 1) * BPW); lane = li within
// block slot `slot`. The loop bound is warp-uniform (every lane takes part in the shuffles).
struct Slot {
  size_t b;  // this lane's block
  int li;    // lane index within the block
  bool live;
};

template <int L>
__device__ __forceinline__ Slot slotOf(size_t warpGroup, size_t nb) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  Slot s;
  s.b = warpGroup * (32 / L) + static_cast<size_t>(lane / L);
  s.li = lane % L;
  s.live = s.b < nb;
  return s;
}

__device__ __forceinline__ size_t warpId() {
  return (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32u;
}
__device__ __forceinline__ size_t warpCount() { return static_cast<size_t>(gridDim.x) * blockDim.x / 32u; }

template <typename T, int G>
__global__ void __launch_bounds__(32 * kWarpsPerCta) encodeKernel(Params p, const T* in, size_t count, uint8_t* out) {
  using Gm = Geo<T, G>;
  const size_t nb = numBlocks(p, count), groups = (nb + Gm::BPW - 1) / Gm::BPW;
  uint8_t* scales = out + nb * (G / 2);
  for (size_t w = warpId(); w < groups; w += warpCount()) {
    const Slot s = slotOf<Gm::L>(w, nb);
    float x[Gm::E];
    const size_t i0 = s.b * G + static_cast<size_t>(s.li) * Gm::E;
    loadRun<T, Gm::E>(in, s.live ? count : 0, i0, x);
    const uint32_t word = groupEncode<G, Gm::E, Gm::L>(p, x, s.b, s.li, s.live, out + i0 / 2);
    if (s.live && s.li == 0) reinterpret_cast<uint32_t*>(scales)[s.b] = word;
  }
}

template <typename T, int G>
__global__ void __launch_bounds__(32 * kWarpsPerCta) decodeKernel(Params p, const uint8_t* in, size_t count, T* out) {
  using Gm = Geo<T, G>;
  const size_t nb = numBlocks(p, count), groups = (nb + Gm::BPW - 1) / Gm::BPW;
  const uint8_t* scales = in + nb * (G / 2);
  for (size_t w = warpId(); w < groups; w += warpCount()) {
    const Slot s = slotOf<Gm::L>(w, nb);
    const size_t bb = s.live ? s.b : 0;  // a dead slot decodes block 0 and stores nothing
    const size_t i0 = bb * G + static_cast<size_t>(s.li) * Gm::E;
    float v[Gm::E];
    groupDecode<G, Gm::E>(in + i0 / 2, loadWord(scales, bb), s.li, v);
    if (s.live) storeRun<T, Gm::E>(out, count, i0, v);
  }
}

template <int G>
__global__ void __launch_bounds__(32 * kWarpsPerCta) accumulateKernel(Params p, Ins ins, int n, size_t count, float* acc) {
  using Gm = Geo<float, G>;
  const size_t nb = numBlocks(p, count), groups = (nb + Gm::BPW - 1) / Gm::BPW;
  for (size_t w = warpId(); w < groups; w += warpCount()) {
    const Slot s = slotOf<Gm::L>(w, nb);
    const size_t bb = s.live ? s.b : 0;
    const size_t i0 = bb * G + static_cast<size_t>(s.li) * Gm::E;
    float a[Gm::E], v[Gm::E];
    loadRun<float, Gm::E>(acc, s.live ? count : 0, i0, a);
    for (int k = 0; k < n; ++k) {
      groupDecode<G, Gm::E>(ins.p[k] + i0 / 2, loadWord(ins.p[k] + nb * (G / 2), bb), s.li, v);
#pragma unroll
      for (int i = 0; i < Gm::E; ++i) a[i] = addAcc(a[i], v[i]);
    }
    if (s.live) storeRun<float, Gm::E>(acc, count, i0, a);
  }
}

template <typename T, int G>
__global__ void __launch_bounds__(32 * kWarpsPerCta) dreKernel(Params p, Ins ins, int np, int self, const T* selfIn,
                                                   size_t count, float scale, uint8_t* out, T* decoded) {
  using Gm = Geo<T, G>;
  constexpr int E = Gm::E;
  const size_t nb = numBlocks(p, count), groups = (nb + Gm::BPW - 1) / Gm::BPW;
  uint8_t* scales = out + nb * (G / 2);
  for (size_t w = warpId(); w < groups; w += warpCount()) {
    const Slot s = slotOf<Gm::L>(w, nb);
    const size_t bb = s.live ? s.b : 0;
    const size_t i0 = bb * G + static_cast<size_t>(s.li) * E;
    float a[E], v[E];
    for (int r = 0; r < np; ++r) {
      if (r == self) loadRun<T, E>(selfIn, s.live ? count : 0, i0, v);
      else groupDecode<G, E>(ins.p[r] + i0 / 2, loadWord(ins.p[r] + nb * (G / 2), bb), s.li, v);
#pragma unroll
      for (int i = 0; i < E; ++i) a[i] = r == 0 ? v[i] : addRn(a[i], v[i]);
    }
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float t = scale != 1.0f ? mulRn(a[i], scale) : a[i];
      a[i] = s.live && i0 + i < count ? t : 0.0f;  // the fp32 sum, not rounded to T (as the host)
    }
    uint8_t* codes = out + i0 / 2;  // a dead slot (bb = 0) only reads block 0's codes
    const uint32_t word = groupEncode<G, E, Gm::L>(p, a, bb, s.li, s.live, codes);
    if (s.live && s.li == 0) reinterpret_cast<uint32_t*>(scales)[bb] = word;
    if (decoded != nullptr) {
      __syncwarp();
      // decode from the lane's own codes (the bytes it just wrote) and the word
      groupDecode<G, E>(codes, word, s.li, v);
      if (s.live) storeRun<T, E>(decoded, count, i0, v);
    }
  }
}

const Params& P(const void* inst) { return *static_cast<const Params*>(inst); }

// Enough warps to fill the device (a grid-stride loop covers the rest): at most 1024 CTAs of
// kWarpsPerCta warps, fewer for small messages.
dim3 gridFor(const Params& p, size_t count) {
  const size_t groups = numBlocks(p, count);  // an upper bound on the warp iterations
  const size_t ctas = (groups + kWarpsPerCta - 1) / kWarpsPerCta;
  return dim3(static_cast<unsigned>(ctas < 1024 ? (ctas ? ctas : 1) : 1024));
}

bool okDtype(int dt) { return dt == cocclFloat32 || dt == cocclFloat16 || dt == cocclBfloat16; }

int launched() { return cudaGetLastError() == cudaSuccess ? COCCL_CODEC_OK : COCCL_CODEC_E_CUDA; }

// Calls f(T{}, std::integral_constant-like G) for the instance's block size and dtype.
template <int G>
struct GTag {
  static constexpr int value = G;
};

template <typename F>
int withG(const Params& p, F&& f) {
  switch (p.block) {
    case 32: return f(GTag<32>{});
    case 64: return f(GTag<64>{});
    case 128: return f(GTag<128>{});
    case 256: return f(GTag<256>{});
    case 512: return f(GTag<512>{});
    case 1024: return f(GTag<1024>{});
    case 2048: return f(GTag<2048>{});
    default: return COCCL_CODEC_E_INVALID;
  }
}

template <typename F>
int withT(int dt, F&& f) {
  if (dt == cocclFloat32) return f(float{});
  if (dt == cocclFloat16) return f(Half{});
  return f(Bf16{});
}

Ins toIns(const void* const* ins, int n, int skip) {
  Ins s{};
  for (int k = 0; k < n; ++k) s.p[k] = k == skip ? nullptr : static_cast<const uint8_t*>(ins[k]);
  return s;
}

}  // namespace

int dEncode(const void* inst, const void* in, int dt, size_t count, void* out, void*,
            cudaStream_t stream) {
  if (!okDtype(dt)) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  const Params& p = P(inst);
  return withT(dt, [&](auto t) {
    using T = decltype(t);
    return withG(p, [&](auto g) {
      encodeKernel<T, decltype(g)::value><<<gridFor(p, count), 32 * kWarpsPerCta, 0, stream>>>(
          p, static_cast<const T*>(in), count, static_cast<uint8_t*>(out));
      return launched();
    });
  });
}

int dDecode(const void* inst, const void* in, size_t count, int dt, void* out, void*,
            cudaStream_t stream) {
  if (!okDtype(dt)) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  const Params& p = P(inst);
  return withT(dt, [&](auto t) {
    using T = decltype(t);
    return withG(p, [&](auto g) {
      decodeKernel<T, decltype(g)::value><<<gridFor(p, count), 32 * kWarpsPerCta, 0, stream>>>(
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
  const Ins s = toIns(ins, n, -1);
  return withG(p, [&](auto g) {
    accumulateKernel<decltype(g)::value><<<gridFor(p, count), 32 * kWarpsPerCta, 0, stream>>>(
        p, s, n, count, acc);
    return launched();
  });
}

int dDecodeReduceEncode(const void* inst, const void* const* ins, int np, int self,
                        const void* selfIn, int dt, size_t count, float scale, void* out,
                        void* decoded, void*, cudaStream_t stream) {
  if (!okDtype(dt) || np < 1 || np > 64 || self < 0 || self >= np) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  const Params& p = P(inst);
  const Ins s = toIns(ins, np, self);
  return withT(dt, [&](auto t) {
    using T = decltype(t);
    return withG(p, [&](auto g) {
      dreKernel<T, decltype(g)::value><<<gridFor(p, count), 32 * kWarpsPerCta, 0, stream>>>(
          p, s, np, self, static_cast<const T*>(selfIn), count, scale, static_cast<uint8_t*>(out),
          static_cast<T*>(decoded));
      return launched();
    });
  });
}

}  // namespace int4c
