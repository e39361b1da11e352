// Warp-cooperative reference versions of the block codecs (src/codecs/<codec>/*_block.h), the
// first, simpler device implementation: a codec block of G elements is held by L = G / E
// consecutive lanes of a warp, lane k of the group owning the contiguous run [k*E, (k+1)*E).
// Test-only (tests/gpu/codec/test_emulated.cc checks it against the host codecs, as a second
// device implementation next to the production tile codecs of src/kernels/cuda/tile_codec.cuh).
// Every floating-point operation is the one the host's scalar block code performs, in the same
// order:
//   - energy: pairwise tree over the element index bits, lowest first -> the lane's run is
//     reduced by kmath::blockEnergy-style levels, then __shfl_xor over the lane bits;
//   - Hadamard: stages over index bits lowest first -> kmath::fwht<E> on the run, then one
//     butterfly per lane bit with __shfl_xor (low-index side adds, high-index side subtracts);
//   - max|.|: exact whatever the order.
// So a payload encoded here is byte-identical to the host codec's for any E.
//
// Requirements: E and G powers of two, E <= G, G / E <= 32; the L lanes of a group call
// together (several groups, i.e. codec blocks, per warp when L < 32; shuffles are masked to
// the group).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "codecs/fp8_ash_ds/ash_block.h"
#include "codecs/int8/int8_block.h"
#include "kernels/cuda/chunk_codec.cuh"
#include "kernels/cuda/elem_tags.cuh"
#include "kernels/payload_geometry.h"

namespace coccl {
namespace kdev {

// ---- reductions over the L lanes of a block group ------------------------------------------

// The lanes of the calling lane's group: shuffles name only them, so groups of a warp may run
// independently (a group past the end of a chunk simply does not call in).
template <int L>
__device__ __forceinline__ unsigned groupMask() {
  if constexpr (L == 32) {
    return kFullMask;
  } else {
    const unsigned lane = threadIdx.x & 31u;
    return ((1u << L) - 1u) << (lane / L * L);
  }
}

template <int L>
__device__ __forceinline__ float groupSumTree(float s) {
  // Butterfly over lane bits, lowest first: identical value in every lane (a+b == b+a).
  const unsigned mask = groupMask<L>();
#pragma unroll
  for (int off = 1; off < L; off <<= 1) s = addRn(s, __shfl_xor_sync(mask, s, off));
  return s;
}

template <int L>
__device__ __forceinline__ uint32_t groupMaxU(uint32_t v) {
  const unsigned mask = groupMask<L>();
#pragma unroll
  for (int off = 1; off < L; off <<= 1) {
    uint32_t o = __shfl_xor_sync(mask, v, off);
    v = o > v ? o : v;
  }
  return v;
}

template <int L>
__device__ __forceinline__ bool groupAny(bool b) {
  return groupMaxU<L>(b ? 1u : 0u) != 0u;
}

// ---- the per-lane pieces of the block math -------------------------------------------------

// Lane's partial energy: the first log2(E) levels of kmath::blockEnergy on its run.
template <int E>
__device__ __forceinline__ float runEnergy(const float (&x)[E]) {
  if constexpr (E == 1) {
    return mulRn(x[0], x[0]);
  } else {
    float t[E / 2];
#pragma unroll
    for (int i = 0; i < E / 2; ++i)
      t[i] = addRn(mulRn(x[2 * i], x[2 * i]), mulRn(x[2 * i + 1], x[2 * i + 1]));
    return pairwiseSum<E / 2>(t);
  }
}

// Full unnormalized Hadamard of the block: local stages, then lane stages.
template <int E, int L>
__device__ __forceinline__ void groupFwht(float (&v)[E], int laneInGroup) {
  if constexpr (E > 1) fwht<E>(v);
  const unsigned mask = groupMask<L>();
#pragma unroll
  for (int off = 1; off < L; off <<= 1) {
    const bool high = (laneInGroup & off) != 0;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      float other = __shfl_xor_sync(mask, v[i], off);
      v[i] = high ? subRn(other, v[i]) : addRn(v[i], other);
    }
  }
}

template <int E, bool finiteOnly = false>
__device__ __forceinline__ uint32_t runMaxAbsBits(const float (&v)[E]) {
  return maxAbsBits<E, finiteOnly>(v);
}

// ---- fp8_ash_ds ------------------------------------------------------------------------------

template <int G, int E, class F>
struct WarpAsh {
  static constexpr int L = G / E;
  static_assert(E >= 1 && L >= 1 && L <= 32 && E * L == G, "bad lane layout");
  using Fmt = AshFormat<F>;

  // Encodes the group's block; lane writes its E codes to `codes` (the block's code bytes
  // start at codes - laneInGroup*E). Returns the scale word (same in every lane of the group).
  __device__ __forceinline__ static uint32_t encode(const float (&x)[E], uint8_t (&codes)[E],
                                                    int laneInGroup, const AshParams& p) {
    const uint32_t amax = groupMaxU<L>(runMaxAbsBits<E>(x));
    if (amax == 0u || !isFiniteBits(amax)) return encodeRaw(x, codes);
    const float energy = groupSumTree<L>(runEnergy<E>(x));
    const float alpha = adaptiveAlpha<G>(energy, Fmt::kQmax, p.lambda, p.alphaMin, p.alphaMax);
    float y[E];
#pragma unroll
    for (int i = 0; i < E; ++i) y[i] = mulRn(alpha, x[i]);
    groupFwht<E, L>(y, laneInGroup);
    const float m = bitsFloat(groupMaxU<L>(runMaxAbsBits<E>(y)));
    const float inv = divRn(Fmt::kQmax, m);
    const float c =
        decodeMultiplier(m, Fmt::kQmax, 1.0f / static_cast<float>(G), divRn(1.0f, alpha));
    if (!scalesUsable(m, inv, c)) return encodeRaw(x, codes);
#pragma unroll
    for (int i = 0; i < E; ++i) codes[i] = floatToFp8SatNonNan<F>(mulRn(y[i], inv));
    return floatBits(c);
  }

  __device__ __forceinline__ static uint32_t encodeRaw(const float (&x)[E], uint8_t (&codes)[E]) {
    const float r = rawScale(bitsFloat(groupMaxU<L>(runMaxAbsBits<E, true>(x))), Fmt::kRawR);
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const uint32_t u = floatBits(x[i]);
      const uint32_t a = u & 0x7fffffffu;
      uint8_t code;
      if (a > 0x7f800000u) {
        code = Fmt::kNan;
      } else if (a == 0x7f800000u) {
        code = (u >> 31) ? Fmt::kNegInf : Fmt::kPosInf;
      } else if (r == 0.0f) {
        code = static_cast<uint8_t>((u >> 24) & 0x80u);
      } else {
        const uint8_t q = floatToFp8Sat<F>(divRn(x[i], r));
        const uint8_t mag = static_cast<uint8_t>(q & 0x7fu);
        code =
            static_cast<uint8_t>((q & 0x80u) | (mag > Fmt::kRawMaxCode ? Fmt::kRawMaxCode : mag));
      }
      codes[i] = code;
    }
    return rawWord(r);
  }

  __device__ __forceinline__ static void decode(const uint8_t (&codes)[E], uint32_t word,
                                                float (&out)[E], int laneInGroup) {
    if (isRawWord(word)) {  // uniform across the group: every lane reads the same word
      const float r = rawScaleFromWord(word);
#pragma unroll
      for (int i = 0; i < E; ++i) out[i] = ashDecodeRawElem<F>(codes[i], r);
      return;
    }
#pragma unroll
    for (int i = 0; i < E; ++i) out[i] = fp8ToFloat<F>(codes[i]);
    groupFwht<E, L>(out, laneInGroup);
    const float c = bitsFloat(word);
#pragma unroll
    for (int i = 0; i < E; ++i) out[i] = mulRn(out[i], c);
  }
};

// ---- int8 ------------------------------------------------------------------------------------

template <int G, int E>
struct WarpInt8 {
  static constexpr int L = G / E;
  static_assert(E >= 1 && L >= 1 && L <= 32 && E * L == G, "bad lane layout");
  using K = Int8Consts;

  __device__ __forceinline__ static uint32_t encode(const float (&x)[E], int8_t (&codes)[E],
                                                    int laneInGroup, bool rotate) {
    const uint32_t amax = groupMaxU<L>(runMaxAbsBits<E>(x));
    if (amax == 0u || !isFiniteBits(amax)) return encodeRaw(x, codes);
    float y[E];
    float m, c;
    if (rotate) {
      const float energy = groupSumTree<L>(runEnergy<E>(x));
      const float alpha =
          adaptiveAlpha<G>(energy, K::kQmax, K::kLambda, K::kAlphaMin, K::kAlphaMax);
#pragma unroll
      for (int i = 0; i < E; ++i) y[i] = mulRn(alpha, x[i]);
      groupFwht<E, L>(y, laneInGroup);
      m = bitsFloat(groupMaxU<L>(runMaxAbsBits<E>(y)));
      c = decodeMultiplier(m, K::kQmax, 1.0f / static_cast<float>(G), divRn(1.0f, alpha));
    } else {
#pragma unroll
      for (int i = 0; i < E; ++i) y[i] = x[i];
      m = bitsFloat(amax);
      c = divRn(m, K::kQmax);
    }
    const float inv = divRn(K::kQmax, m);
    if (!scalesUsable(m, inv, c)) return encodeRaw(x, codes);
#pragma unroll
    for (int i = 0; i < E; ++i)
      codes[i] = static_cast<int8_t>(clampI32(rneInt(mulRn(y[i], inv)), -127, 127));
    return floatBits(c);
  }

  __device__ __forceinline__ static uint32_t encodeRaw(const float (&x)[E], int8_t (&codes)[E]) {
    const float r = rawScale(bitsFloat(groupMaxU<L>(runMaxAbsBits<E, true>(x))), K::kRawR);
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const uint32_t u = floatBits(x[i]);
      const uint32_t a = u & 0x7fffffffu;
      int8_t code;
      if (a > 0x7f800000u) {
        code = K::kNan;
      } else if (a == 0x7f800000u) {
        code = (u >> 31) ? K::kNegInf : K::kPosInf;
      } else {
        const int32_t q = r == 0.0f ? 0 : clampI32(rneInt(divRn(x[i], r)), -125, 125);
        code = static_cast<int8_t>((q == 0 && (u >> 31)) ? K::kNegZero : q);
      }
      codes[i] = code;
    }
    return rawWord(r);
  }

  __device__ __forceinline__ static void decode(const int8_t (&codes)[E], uint32_t word,
                                                bool rotate, float (&out)[E], int laneInGroup) {
    if (isRawWord(word)) {
      const float r = rawScaleFromWord(word);
#pragma unroll
      for (int i = 0; i < E; ++i) out[i] = int8DecodeRawElem(codes[i], r);
      return;
    }
#pragma unroll
    for (int i = 0; i < E; ++i) out[i] = static_cast<float>(codes[i]);
    if (rotate) groupFwht<E, L>(out, laneInGroup);
    const float c = bitsFloat(word);
#pragma unroll
    for (int i = 0; i < E; ++i) out[i] = mulRn(out[i], c);
  }
};

// ---- typed loads and stores of a lane's run ---------------------------------------------------

// Loads elements [first, first+E) of `in` (n valid; the rest read as 0). When the whole run is
// valid and aligned it is one vector load of E*sizeof(T) bytes (<= 16).
template <class Tag, int E>
__device__ __forceinline__ void loadRun(const typename Tag::T* in, size_t first, size_t n,
                                        float (&v)[E]) {
  using T = typename Tag::T;
  constexpr int kBytes = E * static_cast<int>(sizeof(T));
  if (first + E <= n && kBytes <= 16 && (kBytes & (kBytes - 1)) == 0 &&
      (reinterpret_cast<uintptr_t>(in + first) % kBytes) == 0) {
    T tmp[E];
    if constexpr (kBytes == 16) {
      *reinterpret_cast<uint4*>(tmp) = *reinterpret_cast<const uint4*>(in + first);
    } else if constexpr (kBytes == 8) {
      *reinterpret_cast<uint2*>(tmp) = *reinterpret_cast<const uint2*>(in + first);
    } else if constexpr (kBytes == 4) {
      *reinterpret_cast<uint32_t*>(tmp) = *reinterpret_cast<const uint32_t*>(in + first);
    } else {
#pragma unroll
      for (int i = 0; i < E; ++i) tmp[i] = in[first + i];
    }
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = Tag::load(tmp[i]);
    return;
  }
#pragma unroll
  for (int i = 0; i < E; ++i) v[i] = first + i < n ? Tag::load(in[first + i]) : 0.0f;
}

template <class Tag, int E>
__device__ __forceinline__ void storeRun(typename Tag::T* out, size_t first, size_t n,
                                         const float (&v)[E]) {
  using T = typename Tag::T;
  constexpr int kBytes = E * static_cast<int>(sizeof(T));
  if (first + E <= n && kBytes <= 16 && (kBytes & (kBytes - 1)) == 0 &&
      (reinterpret_cast<uintptr_t>(out + first) % kBytes) == 0) {
    T tmp[E];
#pragma unroll
    for (int i = 0; i < E; ++i) tmp[i] = Tag::store(v[i]);
    if constexpr (kBytes == 16) {
      *reinterpret_cast<uint4*>(out + first) = *reinterpret_cast<const uint4*>(tmp);
    } else if constexpr (kBytes == 8) {
      *reinterpret_cast<uint2*>(out + first) = *reinterpret_cast<const uint2*>(tmp);
    } else if constexpr (kBytes == 4) {
      *reinterpret_cast<uint32_t*>(out + first) = *reinterpret_cast<const uint32_t*>(tmp);
    } else {
#pragma unroll
      for (int i = 0; i < E; ++i) out[first + i] = tmp[i];
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < E; ++i)
    if (first + i < n) out[first + i] = Tag::store(v[i]);
}

// E code bytes of a lane (E <= 16): vector load / store when aligned, bytes otherwise.
template <int E, class C>
__device__ __forceinline__ void loadCodes(const C* p, C (&c)[E]) {
  if ((E & (E - 1)) != 0 || (reinterpret_cast<uintptr_t>(p) & (E - 1)) != 0) {
    // payload not aligned to the run (a chunk payload at an odd offset): bytes
#pragma unroll
    for (int i = 0; i < E; ++i) c[i] = p[i];
    return;
  }
  if constexpr (E == 16) {
    *reinterpret_cast<uint4*>(c) = *reinterpret_cast<const uint4*>(p);
  } else if constexpr (E == 8) {
    *reinterpret_cast<uint2*>(c) = *reinterpret_cast<const uint2*>(p);
  } else if constexpr (E == 4) {
    *reinterpret_cast<uint32_t*>(c) = *reinterpret_cast<const uint32_t*>(p);
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) c[i] = p[i];
  }
}

template <int E, class C>
__device__ __forceinline__ void storeCodes(C* p, const C (&c)[E]) {
  if ((E & (E - 1)) != 0 || (reinterpret_cast<uintptr_t>(p) & (E - 1)) != 0) {
#pragma unroll
    for (int i = 0; i < E; ++i) p[i] = c[i];
    return;
  }
  if constexpr (E == 16) {
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(c);
  } else if constexpr (E == 8) {
    *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(c);
  } else if constexpr (E == 4) {
    *reinterpret_cast<uint32_t*>(p) = *reinterpret_cast<const uint32_t*>(c);
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) p[i] = c[i];
  }
}

// ---- the reference chunk operations (were chunk_codec.cuh's ...G versions) ---------------

// Elements per lane for a codec block of G elements and a T of `bytes` bytes: 16-byte vector
// loads where possible, at most 32 lanes per block.
template <int G, int TBytes>
struct LaneRun {
  static constexpr int kVec = 16 / TBytes;
  static constexpr int E = kVec > G ? G : (G / kVec > 32 ? G / 32 : kVec);
  static constexpr int L = G / E;
};

// ---- one codec block, warp-cooperative (each L-lane group of the warp takes one block) -------

template <int G, int E>
struct BlockOps {
  static constexpr int L = G / E;

  // Encodes x (the lane's run of one block) into the lane's E code bytes; returns the block's
  // scale word (same in every lane of the group).
  __device__ __forceinline__ static uint32_t encode(const CodecDesc& d, const float (&x)[E],
                                                    uint8_t (&codes)[E], int lig) {
    if (d.kind == CodecKind::Int8)
      return WarpInt8<G, E>::encode(x, reinterpret_cast<int8_t(&)[E]>(codes), lig, d.rotate != 0);
    const AshParams p{d.lambda, d.alphaMin, d.alphaMax};
    return d.fp8E5M2 ? WarpAsh<G, E, Fp8E5M2>::encode(x, codes, lig, p)
                     : WarpAsh<G, E, Fp8E4M3>::encode(x, codes, lig, p);
  }

  __device__ __forceinline__ static void decode(const CodecDesc& d, const uint8_t (&codes)[E],
                                                uint32_t w, float (&out)[E], int lig) {
    if (d.kind == CodecKind::Int8)
      WarpInt8<G, E>::decode(reinterpret_cast<const int8_t(&)[E]>(codes), w, d.rotate != 0, out,
                             lig);
    else if (d.fp8E5M2)
      WarpAsh<G, E, Fp8E5M2>::decode(codes, w, out, lig);
    else
      WarpAsh<G, E, Fp8E4M3>::decode(codes, w, out, lig);
  }

  // Payload access (kGeo: codes of block b at payload + b*G, scale words at payload + nb*G).
  static constexpr PayloadGeometry kGeo = PayloadGeometry::blocked(8, 4, G, 4);
  __device__ __forceinline__ static void store(uint8_t* payload, size_t nb, size_t b, int lig,
                                               const uint8_t (&codes)[E], uint32_t w) {
    storeCodes<E>(payload + kGeo.codesAt(b) + lig * E, codes);
    if (lig == 0) {
      uint8_t* wp = payload + kGeo.metaAt(nb, b);
      if ((reinterpret_cast<uintptr_t>(wp) & 3u) == 0) {
        *reinterpret_cast<uint32_t*>(wp) = w;
      } else {
        for (int i = 0; i < 4; ++i) wp[i] = static_cast<uint8_t>(w >> (8 * i));
      }
    }
  }
  __device__ __forceinline__ static uint32_t load(const uint8_t* payload, size_t nb, size_t b,
                                                  int lig, uint8_t (&codes)[E]) {
    loadCodes<E>(payload + kGeo.codesAt(b) + lig * E, codes);
    const uint8_t* wp = payload + kGeo.metaAt(nb, b);
    if ((reinterpret_cast<uintptr_t>(wp) & 3u) == 0) return *reinterpret_cast<const uint32_t*>(wp);
    return packBytes4(wp[0], wp[1], wp[2], wp[3]);
  }
  __device__ __forceinline__ static void decodeAt(const CodecDesc& d, const uint8_t* payload,
                                                  size_t nb, size_t b, int lig, float (&out)[E]) {
    uint8_t c[E];
    const uint32_t w = load(payload, nb, b, lig, c);
    decode(d, c, w, out, lig);
  }
};

// Iterates the codec blocks of a chunk handled by this warp, giving (block, lane-in-group).
// Every lane of the warp iterates the same number of times (blocks past the end are skipped
// as a whole group, so the shuffles inside a block stay convergent).
template <int G, int E, class F>
__device__ __forceinline__ void forEachBlock(size_t nb, WarpSet ws, F&& f) {
  constexpr int L = G / E;
  constexpr int kPerWarp = 32 / L;
  const int lane = threadIdx.x & 31;
  const int group = lane / L, lig = lane % L;
  for (size_t base = static_cast<size_t>(ws.warp) * kPerWarp; base < nb;
       base += static_cast<size_t>(ws.nwarps) * kPerWarp) {
    const size_t b = base + group;
    // Groups are independent (their shuffles are masked to the group), so a group past the
    // end simply does not run.
    if (b < nb) f(b, lig);
  }
}

// ---- chunk operations (G known at compile time) ----------------------------------------------

template <int G, class Tag>
__device__ void encodeChunkG(const CodecDesc& d, const typename Tag::T* in, size_t n,
                             uint8_t* payload, WarpSet ws) {
  constexpr int E = LaneRun<G, sizeof(typename Tag::T)>::E;
  const size_t nb = BlockOps<G, E>::kGeo.blocks(n);
  forEachBlock<G, E>(nb, ws, [&](size_t b, int lig) {
    float x[E];
    uint8_t c[E];
    loadRun<Tag, E>(in, b * G + lig * E, n, x);
    const uint32_t w = BlockOps<G, E>::encode(d, x, c, lig);
    BlockOps<G, E>::store(payload, nb, b, lig, c, w);
  });
}

template <int G, class Tag>
__device__ void decodeChunkG(const CodecDesc& d, const uint8_t* payload, size_t n,
                             typename Tag::T* out, WarpSet ws) {
  constexpr int E = LaneRun<G, sizeof(typename Tag::T)>::E;
  const size_t nb = BlockOps<G, E>::kGeo.blocks(n);
  forEachBlock<G, E>(nb, ws, [&](size_t b, int lig) {
    float v[E];
    BlockOps<G, E>::decodeAt(d, payload, nb, b, lig, v);
    storeRun<Tag, E>(out, b * G + lig * E, n, v);
  });
}

// acc = sum over r = 0..p-1 in order (first term assigned, the others added) of
// (r == self ? selfIn : decode(ins[r])); acc *= scale if scale != 1; padding zeroed; then
//   outPayload != null: encode(acc) into it, and userOut (if any) gets decode(outPayload);
//   outPayload == null: userOut gets acc rounded to Tag's type.
// self = -1: no raw input. Equals the host's decodeReduceEncode (for the codecs that keep the
// linear order: not fp8_ash_ds bf16/fp16 nor int8 rotate=1/auto, whose orders are their own) /
// decode-accumulate.
template <int G, class Tag>
__device__ void reduceChunkG(const CodecDesc& d, const uint8_t* const* ins, int p, int self,
                             const typename Tag::T* selfIn, size_t n, float scale,
                             uint8_t* outPayload, typename Tag::T* userOut, WarpSet ws) {
  constexpr int E = LaneRun<G, sizeof(typename Tag::T)>::E;
  const size_t nb = BlockOps<G, E>::kGeo.blocks(n);
  forEachBlock<G, E>(nb, ws, [&](size_t b, int lig) {
    const size_t first = b * G + lig * E;
    float acc[E], z[E];
    for (int r = 0; r < p; ++r) {
      if (r == self)
        loadRun<Tag, E>(selfIn, first, n, z);
      else
        BlockOps<G, E>::decodeAt(d, ins[r], nb, b, lig, z);
#pragma unroll
      for (int i = 0; i < E; ++i) acc[i] = r == 0 ? z[i] : addRn(acc[i], z[i]);
    }
    if (scale != 1.0f) {
#pragma unroll
      for (int i = 0; i < E; ++i) acc[i] = mulRn(acc[i], scale);
    }
#pragma unroll
    for (int i = 0; i < E; ++i)
      if (first + i >= n) acc[i] = 0.0f;
    if (outPayload) {
      uint8_t c[E];
      const uint32_t w = BlockOps<G, E>::encode(d, acc, c, lig);
      BlockOps<G, E>::store(outPayload, nb, b, lig, c, w);
      if (userOut) {  // what every rank will decode from these bytes
        BlockOps<G, E>::decode(d, c, w, z, lig);
        storeRun<Tag, E>(userOut, first, n, z);
      }
    } else if (userOut) {
      storeRun<Tag, E>(userOut, first, n, acc);
    }
  });
}

}  // namespace kdev
}  // namespace coccl
