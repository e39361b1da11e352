// The unfused comparison for the benchmark: fp8_ash_ds as separate kernels with the
// intermediates in device memory. Same math and bytes as the fused kernels (and the host).
//   encode: stats (energy, absmax -> alpha; 0 marks RAW) -> transform (y = H(alpha x), fp32)
//           -> scale (max |y| -> inv, scale word; inv 0 marks RAW) -> cast (codes)
//   decode: dequantize (fp32; RAW blocks fully decoded) -> transform + scale + cast to dt
// Scratch: y (nb*G floats), then alpha, inv and word (nb each).
// Built on coccl_kernels' internal launch plumbing (codec_kernels.cuh) and tile functions.
#include "kernels/cuda/codec_kernels.cuh"
#include "unfused_codec.h"

namespace coccl {
namespace kernels {
namespace detail {
namespace {

// Resident CTAs a multiprocessor the unfused kernels' register allocation must allow:
// 3 x 256 threads (80 registers, 24 warps an SM).
#ifndef COCCL_KERNELS_CODEC_MIN_CTAS
#define COCCL_KERNELS_CODEC_MIN_CTAS 3
#endif
constexpr int kCodecMinCtas = COCCL_KERNELS_CODEC_MIN_CTAS;

struct Scratch {
  float* y;
  float* alpha;
  float* inv;
  uint32_t* word;
};

Scratch carve(void* scratch, size_t nb, int g) {
  Scratch s;
  s.y = static_cast<float*>(scratch);
  s.alpha = s.y + nb * static_cast<size_t>(g);
  s.inv = s.alpha + nb;
  s.word = reinterpret_cast<uint32_t*>(s.inv + nb);
  return s;
}

// The payload geometry of fp8_ash_ds with blocks of G (the codec list).
template <int G>
COCCL_HD_CONSTEXPR PayloadGeometry geoOf() {
  return codecGeometry(CodecKind::Fp8AshDs, G);
}

struct UnfusedArgs {
  CodecDesc d;
  const void* in;  // encode: the input (dt); decode: the payload
  size_t n;
  void* out;  // encode: the payload; decode: the output (dt)
  Scratch s;
};

template <class S>
__device__ __forceinline__ void loadF32(const float* y, size_t base, int lig,
                                        float (&v)[S::kE1][S::kE0]) {
#pragma unroll
  for (int j = 0; j < S::kE1; ++j)
#pragma unroll
    for (int e = 0; e < S::kE0; e += 4) {
      const float4 t = *reinterpret_cast<const float4*>(y + base + S::runStart(j, lig) + e);
      v[j][e] = t.x;
      v[j][e + 1] = t.y;
      v[j][e + 2] = t.z;
      v[j][e + 3] = t.w;
    }
}

template <class S>
__device__ __forceinline__ void storeF32(float* y, size_t base, int lig,
                                         const float (&v)[S::kE1][S::kE0]) {
#pragma unroll
  for (int j = 0; j < S::kE1; ++j)
#pragma unroll
    for (int e = 0; e < S::kE0; e += 4)
      *reinterpret_cast<float4*>(y + base + S::runStart(j, lig) + e) =
          make_float4(v[j][e], v[j][e + 1], v[j][e + 2], v[j][e + 3]);
}

// Kernels whose shuffles run in every lane (the whole warp calls the tile functions); per-block
// outcomes are selected per lane, and only valid groups store.
template <class F, int G, class Tag>
__global__ void __launch_bounds__(kThreads, kCodecMinCtas) statsKernel(const UnfusedArgs a) {
  using S = typename kdev::TileRun<G, sizeof(typename Tag::T)>::Shape;
  using Fmt = kmath::AshFormat<F>;
  const auto* in = static_cast<const typename Tag::T*>(a.in);
  const size_t nb = geoOf<G>().blocks(a.n);
  const bool vec = (reinterpret_cast<uintptr_t>(in) & 15u) == 0;
  const kdev::WarpSet ws = gridWarps();
  kdev::forEachTile<S::kL>(nb, ws.warp, ws.nwarps, [&](size_t b, int lig, bool valid) {
    float v[S::kE1][S::kE0];
    kdev::loadTile<Tag, S>(in, a.n, b * G, lig, vec && b * G + G <= a.n, v);
    const float amax = kdev::groupMaxAbs<S::kL>(kdev::tileMaxAbs<S>(v));
    const float e = kdev::tileEnergy<S>(v);
    const float alpha = kdev::tileAlpha<G>(e, Fmt::kQmax, a.d.lambda, a.d.alphaMin, a.d.alphaMax);
    if (valid && lig == 0) a.s.alpha[b] = kdev::blockIsRaw(amax) ? 0.0f : alpha;
  });
}

template <class F, int G, class Tag>
__global__ void __launch_bounds__(kThreads, kCodecMinCtas) transformKernel(const UnfusedArgs a) {
  using S = typename kdev::TileRun<G, sizeof(typename Tag::T)>::Shape;
  const auto* in = static_cast<const typename Tag::T*>(a.in);
  const size_t nb = geoOf<G>().blocks(a.n);
  const bool vec = (reinterpret_cast<uintptr_t>(in) & 15u) == 0;
  const kdev::WarpSet ws = gridWarps();
  kdev::forEachTile<S::kL>(nb, ws.warp, ws.nwarps, [&](size_t b, int lig, bool valid) {
    const float alpha = a.s.alpha[b];
    float v[S::kE1][S::kE0];
    kdev::loadTile<Tag, S>(in, a.n, b * G, lig, vec && b * G + G <= a.n, v);
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
#pragma unroll
      for (int e = 0; e < S::kE0; ++e) v[j][e] = kmath::mulRn(alpha, v[j][e]);
    kdev::tileFwht<S>(v, lig);
    if (valid && alpha != 0.0f) storeF32<S>(a.s.y, b * G, lig, v);
  });
}

template <class F, int G>
__global__ void __launch_bounds__(kThreads, kCodecMinCtas) scaleKernel(const UnfusedArgs a) {
  using S = typename kdev::TileRun<G, 4>::Shape;
  using Fmt = kmath::AshFormat<F>;
  const size_t nb = geoOf<G>().blocks(a.n);
  const kdev::WarpSet ws = gridWarps();
  kdev::forEachTile<S::kL>(nb, ws.warp, ws.nwarps, [&](size_t b, int lig, bool valid) {
    const float alpha = a.s.alpha[b];
    float v[S::kE1][S::kE0];
    if (alpha != 0.0f) {
      loadF32<S>(a.s.y, b * G, lig, v);
    } else {
#pragma unroll
      for (int j = 0; j < S::kE1; ++j)
#pragma unroll
        for (int e = 0; e < S::kE0; ++e) v[j][e] = 0.0f;
    }
    const float m = kdev::groupMaxAbs<S::kL>(kdev::tileMaxAbs<S>(v));
    const float i = kmath::divRn(Fmt::kQmax, m);
    const float c =
        kmath::decodeMultiplier(m, Fmt::kQmax, 1.0f / static_cast<float>(G), kdev::invPow2(alpha));
    const bool ok = alpha != 0.0f && kmath::scalesUsable(m, i, c);
    if (valid && lig == 0) {
      a.s.inv[b] = ok ? i : 0.0f;
      a.s.word[b] = ok ? kmath::floatBits(c) : 0u;
    }
  });
}

template <class F, int G, class Tag>
__global__ void __launch_bounds__(kThreads, kCodecMinCtas) castKernel(const UnfusedArgs a) {
  using S = typename kdev::TileRun<G, sizeof(typename Tag::T)>::Shape;
  const auto* in = static_cast<const typename Tag::T*>(a.in);
  auto* payload = static_cast<uint8_t*>(a.out);
  const size_t nb = geoOf<G>().blocks(a.n);
  const bool vec = (reinterpret_cast<uintptr_t>(in) & 15u) == 0;
  const bool outVec = (reinterpret_cast<uintptr_t>(payload) & (S::kE0 - 1)) == 0;
  const kdev::WarpSet ws = gridWarps();
  kdev::forEachTile<S::kL>(nb, ws.warp, ws.nwarps, [&](size_t b, int lig, bool valid) {
    const float inv = a.s.inv[b];
    const bool raw = inv == 0.0f;
    float v[S::kE1][S::kE0];
    uint32_t q[S::kE1][S::kW];
    uint32_t word = a.s.word[b];
    if (raw)
      kdev::loadTile<Tag, S>(in, a.n, b * G, lig, vec && b * G + G <= a.n, v);
    else
      loadF32<S>(a.s.y, b * G, lig, v);
    if (__any_sync(kdev::kFullMask, raw)) {
      const float r = kmath::rawScale(kdev::groupMaxAbsFinite<S>(v), kmath::AshFormat<F>::kRawR);
      if (raw) {
        kdev::TileAsh<F, S>::rawCodes(v, r, q);
        word = kmath::rawWord(r);
      }
    }
    if (!raw) {
#pragma unroll
      for (int j = 0; j < S::kE1; ++j)
#pragma unroll
        for (int w = 0; w < S::kW; ++w) {
          const float* y = &v[j][4 * w];
          q[j][w] = kdev::f32x4ToFp8x4<F>(kmath::mulRn(y[0], inv), kmath::mulRn(y[1], inv),
                                          kmath::mulRn(y[2], inv), kmath::mulRn(y[3], inv));
        }
    }
    if (valid) kdev::storeCodesTile<S>(payload, nb, b, lig, outVec, q, word);
  });
}

template <class F, int G>
__global__ void __launch_bounds__(kThreads, kCodecMinCtas) dequantKernel(const UnfusedArgs a) {
  using S = typename kdev::TileRun<G, 4>::Shape;
  using C = kdev::TileAsh<F, S>;
  const auto* payload = static_cast<const uint8_t*>(a.in);
  const size_t nb = geoOf<G>().blocks(a.n);
  const bool vec = (reinterpret_cast<uintptr_t>(payload) & (S::kE0 - 1)) == 0;
  const kdev::WarpSet ws = gridWarps();
  kdev::forEachTile<S::kL>(nb, ws.warp, ws.nwarps, [&](size_t b, int lig, bool valid) {
    uint32_t q[S::kE1][S::kW];
    float v[S::kE1][S::kE0];
    const uint32_t word = kdev::loadCodesTile<S>(payload, nb, b, lig, vec, q);
    C::dequant(q, v);
    if (kmath::isRawWord(word)) {  // RAW blocks: the final values (no shuffles on this path)
      const float r = kmath::rawScaleFromWord(word);
#pragma unroll
      for (int j = 0; j < S::kE1; ++j)
#pragma unroll
        for (int e = 0; e < S::kE0; ++e) {
          const uint32_t code = (q[j][e / 4] >> (8 * (e % 4))) & 0xffu;
          v[j][e] = kmath::ashDecodeRawElem<F>(static_cast<uint8_t>(code), r);
        }
    }
    if (valid) storeF32<S>(a.s.y, b * G, lig, v);
  });
}

template <class F, int G, class Tag>
__global__ void __launch_bounds__(kThreads, kCodecMinCtas) finishKernel(const UnfusedArgs a) {
  using S = typename kdev::TileRun<G, sizeof(typename Tag::T)>::Shape;
  const auto* payload = static_cast<const uint8_t*>(a.in);
  auto* out = static_cast<typename Tag::T*>(a.out);
  const size_t nb = geoOf<G>().blocks(a.n);
  const bool vec = (reinterpret_cast<uintptr_t>(out) & 15u) == 0;
  const bool wordVec = (reinterpret_cast<uintptr_t>(payload) & 3u) == 0;
  const kdev::WarpSet ws = gridWarps();
  kdev::forEachTile<S::kL>(nb, ws.warp, ws.nwarps, [&](size_t b, int lig, bool valid) {
    const uint8_t* wp = payload + geoOf<G>().metaAt(nb, b);
    const uint32_t word = wordVec ? *reinterpret_cast<const uint32_t*>(wp)
                                  : kdev::packBytes4(wp[0], wp[1], wp[2], wp[3]);
    const bool raw = kmath::isRawWord(word);
    float v[S::kE1][S::kE0], t[S::kE1][S::kE0];
    loadF32<S>(a.s.y, b * G, lig, v);
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
#pragma unroll
      for (int e = 0; e < S::kE0; ++e) t[j][e] = v[j][e];
    kdev::tileFwht<S>(t, lig);
    if (!raw) {
      const float c = kmath::bitsFloat(word);
#pragma unroll
      for (int j = 0; j < S::kE1; ++j)
#pragma unroll
        for (int e = 0; e < S::kE0; ++e) v[j][e] = kmath::mulRn(t[j][e], c);
    }
    if (valid) kdev::storeTile<Tag, S>(out, a.n, b * G, lig, vec && b * G + G <= a.n, v);
  });
}

template <class Fn>
void dispatchAsh(const CodecDesc& d, Fn&& fn) {
  if (d.fp8E5M2)
    fn(kmath::Fp8E5M2{});
  else
    fn(kmath::Fp8E4M3{});
}

void checkUnfused(const CodecDesc& d, cocclDataType_t dt, const char* what) {
  checkDesc(d, what);
  COCCL_CHECK_ARG(d.kind == CodecKind::Fp8AshDs, "%s: the unfused kernels are fp8_ash_ds only",
                  what);
  checkCodecType(d, dt, what);
}

}  // namespace
}  // namespace detail

size_t unfusedScratchBytes(const CodecDesc& d, size_t count) {
  detail::checkDesc(d, "unfusedScratchBytes");
  const size_t g = static_cast<size_t>(d.block > 0 ? d.block : 1);
  const size_t nb = (count + g - 1) / g;  // d may be None here (block 1)
  return nb * g * sizeof(float) + nb * (2 * sizeof(float) + sizeof(uint32_t));
}

void encodeUnfused(const CodecDesc& d, const void* in, cocclDataType_t dt, size_t count, void* out,
                   void* scratch, cudaStream_t stream) {
  constexpr const char* kWhat = "kernels::encodeUnfused";
  detail::checkUnfused(d, dt, kWhat);
  if (count == 0) return;
  detail::checkPtr(in, "in", kWhat);
  detail::checkPtr(out, "out", kWhat);
  detail::checkPtr(scratch, "scratch", kWhat);
  const size_t nb = static_cast<size_t>(codecGeometry(d).blocks(count));
  const detail::UnfusedArgs a{d, in, count, out, detail::carve(scratch, nb, d.block)};
  detail::dispatchAsh(d, [&](auto f) {
    detail::dispatchG(d.block, [&](auto g) {
      detail::dispatchTag(dt, [&](auto tag) {
        using F = decltype(f);
        constexpr int G = decltype(g)::value;
        using Tag = decltype(tag);
        const size_t w = detail::warpsFor<G, Tag>(nb);
        detail::launch<detail::statsKernel<F, G, Tag>>(a, w, stream, kWhat);
        detail::launch<detail::transformKernel<F, G, Tag>>(a, w, stream, kWhat);
        detail::launch<detail::scaleKernel<F, G>>(a, detail::warpsFor<G, kdev::Fp32Tag>(nb), stream,
                                                  kWhat);
        detail::launch<detail::castKernel<F, G, Tag>>(a, w, stream, kWhat);
      });
    });
  });
}

void decodeUnfused(const CodecDesc& d, const void* in, size_t count, cocclDataType_t dt, void* out,
                   void* scratch, cudaStream_t stream) {
  constexpr const char* kWhat = "kernels::decodeUnfused";
  detail::checkUnfused(d, dt, kWhat);
  if (count == 0) return;
  detail::checkPtr(in, "in", kWhat);
  detail::checkPtr(out, "out", kWhat);
  detail::checkPtr(scratch, "scratch", kWhat);
  const size_t nb = static_cast<size_t>(codecGeometry(d).blocks(count));
  const detail::UnfusedArgs a{d, in, count, out, detail::carve(scratch, nb, d.block)};
  detail::dispatchAsh(d, [&](auto f) {
    detail::dispatchG(d.block, [&](auto g) {
      detail::dispatchTag(dt, [&](auto tag) {
        using F = decltype(f);
        constexpr int G = decltype(g)::value;
        using Tag = decltype(tag);
        detail::launch<detail::dequantKernel<F, G>>(a, detail::warpsFor<G, kdev::Fp32Tag>(nb),
                                                    stream, kWhat);
        detail::launch<detail::finishKernel<F, G, Tag>>(a, detail::warpsFor<G, Tag>(nb), stream,
                                                        kWhat);
      });
    });
  });
}

}  // namespace kernels
}  // namespace coccl
