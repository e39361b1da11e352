// int4 codec: device kernels. One warp per block of G elements; lane l holds the E = G / 32
// contiguous elements [l E, (l + 1) E) of its block in registers (16-byte vector loads where
// the block is full and aligned). The rotation's stages below E run inside a lane, the stages
// E..S/2 across lanes by __shfl_xor_sync (partner lane l ^ (h / E) at stage h; the lane whose
// bit is clear takes a + c, the other a - c: the host's operations on the same operands).
// Maxima and the stochastic block hash are warp reductions of exact integer operations, so
// the order does not matter. Compiled with --fmad=false; the math is int4_math.h's.
#include <cuda_runtime.h>

#include "int4_device.h"
#include "int4_math.h"
#include "int4_params.h"

namespace int4c {
namespace {

constexpr int kWarpsPerCta = 4;
constexpr unsigned kFull = 0xffffffffu;

struct Ins {
  const uint8_t* p[64];
};

__device__ __forceinline__ uint32_t warpMax(uint32_t v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const uint32_t w = __shfl_xor_sync(kFull, v, o);
    v = w > v ? w : v;
  }
  return v;
}

__device__ __forceinline__ uint32_t warpXor(uint32_t v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v ^= __shfl_xor_sync(kFull, v, o);
  return v;
}

// H_S on the warp's block (S = min(G, 128), E = G / 32 elements per lane).
template <int G>
__device__ __forceinline__ void warpFwht(float (&v)[G / 32], int lane) {
  constexpr int E = G / 32, S = G < 128 ? G : 128;
#pragma unroll
  for (int h = 1; h < E; h <<= 1)
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
    const bool upper = (lane & lm) != 0;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float o = __shfl_xor_sync(kFull, v[i], lm);
      v[i] = upper ? subRn(o, v[i]) : addRn(v[i], o);
    }
  }
}

// Loads the lane's E elements of block b as fp32 (zeros past count).
template <typename T, int G>
__device__ __forceinline__ void loadLane(const T* in, size_t count, size_t b, int lane,
                                         float (&x)[G / 32]) {
  constexpr int E = G / 32;
  const size_t i0 = b * G + static_cast<size_t>(lane) * E;
  const T* src = in + i0;
  if constexpr ((E * sizeof(T)) % 16 == 0) {
    if (i0 + E <= count && (reinterpret_cast<uintptr_t>(src) & 15u) == 0) {
      T t[E];
#pragma unroll
      for (int k = 0; k < static_cast<int>(E * sizeof(T) / 16); ++k)
        reinterpret_cast<uint4*>(t)[k] = __ldg(reinterpret_cast<const uint4*>(src) + k);
#pragma unroll
      for (int i = 0; i < E; ++i) x[i] = Io<T>::load(t[i]);
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < E; ++i) x[i] = i0 + i < count ? Io<T>::load(src[i]) : 0.0f;
}

template <typename T, int G>
__device__ __forceinline__ void storeLane(T* out, size_t count, size_t b, int lane,
                                          const float (&v)[G / 32]) {
  constexpr int E = G / 32;
  const size_t i0 = b * G + static_cast<size_t>(lane) * E;
  T* dst = out + i0;
  if constexpr ((E * sizeof(T)) % 16 == 0) {
    if (i0 + E <= count && (reinterpret_cast<uintptr_t>(dst) & 15u) == 0) {
      T t[E];
#pragma unroll
      for (int i = 0; i < E; ++i) t[i] = Io<T>::store(v[i]);
#pragma unroll
      for (int k = 0; k < static_cast<int>(E * sizeof(T) / 16); ++k)
        reinterpret_cast<uint4*>(dst)[k] = reinterpret_cast<const uint4*>(t)[k];
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < E; ++i)
    if (i0 + i < count) dst[i] = Io<T>::store(v[i]);
}

// Writes the lane's E codes (E >= 2: E / 2 bytes at lane * E / 2; E = 1: even lanes write the
// byte of their pair, the odd lane's code in the high nibble).
template <int G>
__device__ __forceinline__ void storeCodes(uint8_t* codes, int lane, const int32_t (&q)[G / 32]) {
  constexpr int E = G / 32;
  if constexpr (E == 1) {
    const int32_t hi = __shfl_down_sync(kFull, q[0], 1);
    if ((lane & 1) == 0) codes[lane / 2] = packPair(q[0], hi);
  } else {
    uint8_t t[E / 2];
#pragma unroll
    for (int i = 0; i < E / 2; ++i) t[i] = packPair(q[2 * i], q[2 * i + 1]);
    uint8_t* dst = codes + lane * (E / 2);
    if constexpr (E / 2 >= 4) {
#pragma unroll
      for (int k = 0; k < E / 8; ++k) reinterpret_cast<uint32_t*>(dst)[k] = reinterpret_cast<const uint32_t*>(t)[k];
    } else {
#pragma unroll
      for (int i = 0; i < E / 2; ++i) dst[i] = t[i];
    }
  }
}

// Encodes the warp's block from x (fp32, padded); codes/scales of the payload.
template <int G>
__device__ __forceinline__ uint32_t warpEncode(const Params& p, const float (&x)[G / 32], size_t b,
                                               int lane, uint8_t* codes) {
  constexpr int E = G / 32, S = G < 128 ? G : 128;
  uint32_t amax = 0, fmaxb = 0;
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const uint32_t a = fbits(x[i]) & 0x7fffffffu;
    amax = a > amax ? a : amax;
    if (a < 0x7f800000u) fmaxb = a > fmaxb ? a : fmaxb;
  }
  amax = warpMax(amax);
  fmaxb = warpMax(fmaxb);
  float y[E];
  float m = 0.0f;
  if (p.mode != kModePlain && amax < 0x7f800000u) {
#pragma unroll
    for (int i = 0; i < E; ++i) y[i] = x[i];
    warpFwht<G>(y, lane);
    uint32_t mb = 0;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const uint32_t a = fbits(y[i]) & 0x7fffffffu;
      mb = a > mb ? a : mb;
    }
    m = bitsf(warpMax(mb));
  }
  BlockPlan plan = planBlock(amax, bitsf(fmaxb), m, p.mode, S);
  if (p.mode == kModeAuto && plan.rotated) {
    const BlockPlan plain = planBlock(amax, bitsf(fmaxb), m, kModePlain, S);
    float eu = sqErr(mulRn(x[0], plain.inv)), er = sqErr(mulRn(y[0], plan.inv));
#pragma unroll
    for (int i = 1; i < E; ++i) {
      eu = addRn(eu, sqErr(mulRn(x[i], plain.inv)));
      er = addRn(er, sqErr(mulRn(y[i], plan.inv)));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      eu = addRn(eu, __shfl_xor_sync(kFull, eu, o));
      er = addRn(er, __shfl_xor_sync(kFull, er, o));
    }
    if (!autoRotates(er, eu, plan.word, plain.word, S)) plan = plain;
  }
  int32_t q[E];
  if (plan.raw) {
#pragma unroll
    for (int i = 0; i < E; ++i) q[i] = rawCode(x[i], plan.inv);
  } else {
    uint32_t bh = 0;
    if (p.stochastic) {
#pragma unroll
      for (int i = 0; i < E; ++i) bh ^= elemHashTerm(fbits(x[i]), static_cast<uint32_t>(lane * E + i));
      bh = warpXor(bh);
    }
    const uint64_t e0 = static_cast<uint64_t>(b) * G + static_cast<uint64_t>(lane) * E;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float v = plan.rotated ? y[i] : x[i];
      const uint32_t h = p.stochastic ? int4Hash(p.seed, e0 + i, bh) : 0u;
      q[i] = quant(mulRn(v, plan.inv), p.stochastic, h);
    }
  }
  storeCodes<G>(codes, lane, q);
  return plan.word;
}

// Decodes the warp's block into v (fp32).
template <int G>
__device__ __forceinline__ void warpDecode(const uint8_t* codes, uint32_t word, int lane,
                                           float (&v)[G / 32]) {
  constexpr int E = G / 32;
  int32_t q[E];
  if constexpr (E == 1) {
    q[0] = nibble(codes[lane / 2], lane & 1);
  } else {
    uint8_t t[E / 2];
    const uint8_t* src = codes + lane * (E / 2);
    if constexpr (E / 2 >= 4) {
#pragma unroll
      for (int k = 0; k < E / 8; ++k) reinterpret_cast<uint32_t*>(t)[k] = reinterpret_cast<const uint32_t*>(src)[k];
    } else {
#pragma unroll
      for (int i = 0; i < E / 2; ++i) t[i] = src[i];
    }
#pragma unroll
    for (int i = 0; i < E; ++i) q[i] = nibble(t[i / 2], i & 1);
  }
  if (word & kRawBit) {
    const float r = bitsf(word & 0x7fffffffu);
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = rawDecode(q[i], r);
    return;
  }
  const float c = bitsf(word);
#pragma unroll
  for (int i = 0; i < E; ++i) v[i] = static_cast<float>(q[i]);
  if ((word & kPlainFlag) == 0u) warpFwht<G>(v, lane);
#pragma unroll
  for (int i = 0; i < E; ++i) v[i] = mulRn(v[i], c);
}

__device__ __forceinline__ bool warpBlock(size_t nb, size_t* b, int* lane) {
  *lane = static_cast<int>(threadIdx.x & 31u);
  *b = static_cast<size_t>(blockIdx.x) * kWarpsPerCta + threadIdx.x / 32u;
  return *b < nb;
}

__device__ __forceinline__ uint32_t loadWord(const uint8_t* scales, size_t b) {
  return reinterpret_cast<const uint32_t*>(scales)[b];
}

template <typename T, int G>
__global__ void encodeKernel(Params p, const T* in, size_t count, uint8_t* out) {
  size_t b;
  int lane;
  const size_t nb = numBlocks(p, count);
  if (!warpBlock(nb, &b, &lane)) return;
  float x[G / 32];
  loadLane<T, G>(in, count, b, lane, x);
  const uint32_t w = warpEncode<G>(p, x, b, lane, out + b * (G / 2));
  if (lane == 0) reinterpret_cast<uint32_t*>(out + nb * (G / 2))[b] = w;
}

template <typename T, int G>
__global__ void decodeKernel(Params p, const uint8_t* in, size_t count, T* out) {
  size_t b;
  int lane;
  const size_t nb = numBlocks(p, count);
  if (!warpBlock(nb, &b, &lane)) return;
  float v[G / 32];
  warpDecode<G>(in + b * (G / 2), loadWord(in + nb * (G / 2), b), lane, v);
  storeLane<T, G>(out, count, b, lane, v);
}

template <int G>
__global__ void accumulateKernel(Params p, Ins ins, int n, size_t count, float* acc) {
  size_t b;
  int lane;
  const size_t nb = numBlocks(p, count);
  if (!warpBlock(nb, &b, &lane)) return;
  float a[G / 32], v[G / 32];
  loadLane<float, G>(acc, count, b, lane, a);
  for (int k = 0; k < n; ++k) {
    warpDecode<G>(ins.p[k] + b * (G / 2), loadWord(ins.p[k] + nb * (G / 2), b), lane, v);
#pragma unroll
    for (int i = 0; i < G / 32; ++i) a[i] = addRn(a[i], v[i]);
  }
  storeLane<float, G>(acc, count, b, lane, a);
}

template <typename T, int G>
__global__ void dreKernel(Params p, Ins ins, int np, int self, const T* selfIn, size_t count,
                          float scale, uint8_t* out, T* decoded) {
  constexpr int E = G / 32;
  size_t b;
  int lane;
  const size_t nb = numBlocks(p, count);
  if (!warpBlock(nb, &b, &lane)) return;
  float a[E], v[E];
  for (int r = 0; r < np; ++r) {
    if (r == self) loadLane<T, G>(selfIn, count, b, lane, v);
    else warpDecode<G>(ins.p[r] + b * (G / 2), loadWord(ins.p[r] + nb * (G / 2), b), lane, v);
#pragma unroll
    for (int i = 0; i < E; ++i) a[i] = r == 0 ? v[i] : addRn(a[i], v[i]);
  }
  const size_t i0 = b * G + static_cast<size_t>(lane) * E;
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const float s = scale != 1.0f ? mulRn(a[i], scale) : a[i];
    a[i] = i0 + i < count ? s : 0.0f;  // the fp32 sum, not rounded to T (as the host)
  }
  const uint32_t w = warpEncode<G>(p, a, b, lane, out + b * (G / 2));
  if (lane == 0) reinterpret_cast<uint32_t*>(out + nb * (G / 2))[b] = w;
  if (decoded != nullptr) {
    __syncwarp();
    warpDecode<G>(out + b * (G / 2), w, lane, v);
    storeLane<T, G>(decoded, count, b, lane, v);
  }
}

const Params& P(const void* inst) { return *static_cast<const Params*>(inst); }

dim3 gridFor(const Params& p, size_t count) {
  return dim3(static_cast<unsigned>((numBlocks(p, count) + kWarpsPerCta - 1) / kWarpsPerCta));
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
