// Tile loads and stores (tile_math.cuh's layout): typed input / output tiles, payload code tiles
// (the host layout, tileGeometry<S>(): the codes of block b at codesAt(b) = b*G, the scale words
// from metaOffset(nb) = nb*G), the block iteration of a warp, and the shared-memory staging of
// the grid-wide kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/tile_math.cuh"
#include "kernels/payload_geometry.h"

namespace coccl {
namespace kdev {

// ---- tile loads and stores ------------------------------------------------------------------

// 16-byte vectors of a Tag's type <-> E0 floats; single elements.
template <class Tag>
struct TileIO;

template <>
struct TileIO<Fp32Tag> {
  using T = float;
  __device__ __forceinline__ static void unpack(const uint4& r, float (&v)[4]) {
    v[0] = kmath::bitsFloat(r.x);
    v[1] = kmath::bitsFloat(r.y);
    v[2] = kmath::bitsFloat(r.z);
    v[3] = kmath::bitsFloat(r.w);
  }
  __device__ __forceinline__ static uint4 pack(const float (&v)[4]) {
    return make_uint4(kmath::floatBits(v[0]), kmath::floatBits(v[1]), kmath::floatBits(v[2]),
                      kmath::floatBits(v[3]));
  }
  __device__ __forceinline__ static float load(float x) { return x; }
  __device__ __forceinline__ static float store(float v) { return v; }
};

// The 16-bit types: eight elements to a 16-byte vector, two to a word. Conv supplies the pair
// conversions unpack1 (word -> lo, hi) and pack2 (lo, hi -> word) and the scalar load / store.
template <class Conv>
struct TileIO16 : Conv {
  using T = uint16_t;
  __device__ __forceinline__ static void unpack(const uint4& r, float (&v)[8]) {
    Conv::unpack1(r.x, v[0], v[1]);
    Conv::unpack1(r.y, v[2], v[3]);
    Conv::unpack1(r.z, v[4], v[5]);
    Conv::unpack1(r.w, v[6], v[7]);
  }
  __device__ __forceinline__ static uint4 pack(const float (&v)[8]) {
    return make_uint4(Conv::pack2(v[0], v[1]), Conv::pack2(v[2], v[3]), Conv::pack2(v[4], v[5]),
                      Conv::pack2(v[6], v[7]));
  }
};

struct Bf16Conv {
  __device__ __forceinline__ static void unpack1(uint32_t w, float& lo, float& hi) {
    lo = kmath::bitsFloat(w << 16);
    hi = kmath::bitsFloat(w & 0xffff0000u);
  }
  __device__ __forceinline__ static uint32_t pack2(float lo, float hi) {
    return f32x2ToBf16x2(lo, hi);
  }
  __device__ __forceinline__ static float load(uint16_t x) { return bf16BitsToF32(x); }
  __device__ __forceinline__ static uint16_t store(float v) { return f32ToBf16(v); }
};

struct Fp16Conv {
  __device__ __forceinline__ static void unpack1(uint32_t w, float& lo, float& hi) {
    lo = fp16BitsToF32(static_cast<uint16_t>(w));
    hi = fp16BitsToF32(static_cast<uint16_t>(w >> 16));
  }
  __device__ __forceinline__ static uint32_t pack2(float lo, float hi) {
    return f32x2ToFp16x2(lo, hi);
  }
  __device__ __forceinline__ static float load(uint16_t x) { return fp16BitsToF32(x); }
  __device__ __forceinline__ static uint16_t store(float v) { return f32ToFp16(v); }
};

template <>
struct TileIO<Bf16Tag> : TileIO16<Bf16Conv> {};

template <>
struct TileIO<Fp16Tag> : TileIO16<Fp16Conv> {};

// Loads the lane's tile of block elements [base, base + G) of `in` (n valid elements; the rest
// read as 0). `full`: the whole block is valid and `in` is 16-byte aligned (vector loads).
template <class Tag, class S>
__device__ __forceinline__ void loadTile(const typename Tag::T* in, size_t n, size_t base, int lig,
                                         bool full, float (&v)[S::kE1][S::kE0]) {
  using IO = TileIO<Tag>;
  static_assert(S::kE0 * sizeof(typename Tag::T) == 16, "runs are 16-byte vectors");
  if (full) {
    uint4 r[S::kE1];
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
      r[j] = *reinterpret_cast<const uint4*>(in + base + S::runStart(j, lig));
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) IO::unpack(r[j], v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      const size_t first = base + S::runStart(j, lig);
#pragma unroll
      for (int e = 0; e < S::kE0; ++e) v[j][e] = first + e < n ? IO::load(in[first + e]) : 0.0f;
    }
  }
}

template <class Tag, class S>
__device__ __forceinline__ void storeTile(typename Tag::T* out, size_t n, size_t base, int lig,
                                          bool full, const float (&v)[S::kE1][S::kE0]) {
  using IO = TileIO<Tag>;
  if (full) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j)
      *reinterpret_cast<uint4*>(out + base + S::runStart(j, lig)) = IO::pack(v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      const size_t first = base + S::runStart(j, lig);
#pragma unroll
      for (int e = 0; e < S::kE0; ++e)
        if (first + e < n) out[first + e] = IO::store(v[j][e]);
    }
  }
}

// The payload geometry the code tiles are written for: one byte a code (a run's E0 codes are
// E0 bytes, four to a word of q), one 4-byte scale word a block. Every tile family checks that
// its codec's geometry (the codec list) is this one (tile_codec.cuh).
template <class S>
COCCL_HD_CONSTEXPR PayloadGeometry tileGeometry() {
  return PayloadGeometry::blocked(8, 4, S::kG, 4);
}

// Payload access (layout tileGeometry<S>()). `vec`: payload is E0-byte aligned (then the scale
// words are 4-byte aligned).
template <class S>
__device__ __forceinline__ uint32_t loadCodesTile(const uint8_t* payload, size_t nb, size_t b,
                                                  int lig, bool vec, uint32_t (&q)[S::kE1][S::kW]) {
  constexpr PayloadGeometry geo = tileGeometry<S>();
  const uint8_t* blk = payload + geo.codesAt(b);
  const uint8_t* wp = payload + geo.metaAt(nb, b);
  if (vec) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      const uint8_t* p = blk + S::runStart(j, lig);
      if constexpr (S::kW == 1) {
        q[j][0] = *reinterpret_cast<const uint32_t*>(p);
      } else if constexpr (S::kW == 2) {
        const uint2 t = *reinterpret_cast<const uint2*>(p);
        q[j][0] = t.x;
        q[j][1] = t.y;
      } else {
#pragma unroll
        for (int w = 0; w < S::kW; w += 4) {
          const uint4 t = *reinterpret_cast<const uint4*>(p + 4 * w);
          q[j][w] = t.x;
          q[j][w + 1] = t.y;
          q[j][w + 2] = t.z;
          q[j][w + 3] = t.w;
        }
      }
    }
    return *reinterpret_cast<const uint32_t*>(wp);
  }
#pragma unroll
  for (int j = 0; j < S::kE1; ++j) {
    const uint8_t* p = blk + S::runStart(j, lig);
#pragma unroll
    for (int w = 0; w < S::kW; ++w)
      q[j][w] = packBytes4(p[4 * w], p[4 * w + 1], p[4 * w + 2], p[4 * w + 3]);
  }
  return packBytes4(wp[0], wp[1], wp[2], wp[3]);
}

template <class S>
__device__ __forceinline__ void storeCodesTile(uint8_t* payload, size_t nb, size_t b, int lig,
                                               bool vec, const uint32_t (&q)[S::kE1][S::kW],
                                               uint32_t word) {
  constexpr PayloadGeometry geo = tileGeometry<S>();
  uint8_t* blk = payload + geo.codesAt(b);
  uint8_t* wp = payload + geo.metaAt(nb, b);
  if (vec) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      uint8_t* p = blk + S::runStart(j, lig);
      if constexpr (S::kW == 1) {
        *reinterpret_cast<uint32_t*>(p) = q[j][0];
      } else if constexpr (S::kW == 2) {
        *reinterpret_cast<uint2*>(p) = make_uint2(q[j][0], q[j][1]);
      } else {
#pragma unroll
        for (int w = 0; w < S::kW; w += 4)
          *reinterpret_cast<uint4*>(p + 4 * w) =
              make_uint4(q[j][w], q[j][w + 1], q[j][w + 2], q[j][w + 3]);
      }
    }
    if (lig == 0) *reinterpret_cast<uint32_t*>(wp) = word;
    return;
  }
#pragma unroll
  for (int j = 0; j < S::kE1; ++j) {
    uint8_t* p = blk + S::runStart(j, lig);
#pragma unroll
    for (int w = 0; w < S::kW; ++w)
#pragma unroll
      for (int i = 0; i < 4; ++i) p[4 * w + i] = static_cast<uint8_t>(q[j][w] >> (8 * i));
  }
  if (lig == 0)
#pragma unroll
    for (int i = 0; i < 4; ++i) wp[i] = static_cast<uint8_t>(word >> (8 * i));
}

// Iterates the codec blocks of a chunk handled by this warp: each L-lane group of the warp takes
// one block, a warp 32/L consecutive blocks, the warps of the set interleaved. All 32 lanes make
// every call, so that the shuffles inside f stay warp-wide: f(b, lig, valid) with valid false
// for a group past the end, whose b is clamped to the last block (f computes on it and must not
// store). The warp's tiles of 32/L blocks are first, first + nwarps, ... (first: usually the
// warp's index in the set).
template <int L, class Fn>
__device__ __forceinline__ void forEachTile(size_t nb, size_t first, int nwarps, Fn&& f) {
  constexpr int kPerWarp = 32 / L;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int group = lane / L, lig = lane % L;
  for (size_t base = first * kPerWarp; base < nb; base += static_cast<size_t>(nwarps) * kPerWarp) {
    const size_t b = base + static_cast<size_t>(group);
    const bool valid = b < nb;
    f(valid ? b : nb - 1, lig, valid);
  }
}

// ---- staging through shared memory ------------------------------------------------------------
//
// The grid-wide kernels give each warp a ring of kStages tile buffers in shared memory, filled
// with cp.async (16-byte copies into shared memory that take no registers), so that the loads
// of the next tiles are in flight while the current one is computed: without it a warp's loads
// are only in flight while it waits for them. The copies of a tile are spread over the lanes in
// the order that makes each copy instruction read 512 contiguous bytes; each lane then reads
// its runs back from shared memory (after cp.async.wait_group and a warp barrier, since lanes
// read what other lanes copied). Shared memory is addressed by 32-bit shared-window addresses
// (SmemAddr) on sm_80+; older GPUs copy through registers, and the host build (the emulated
// tests) uses plain pointers and copies (its __syncwarp is a warp barrier).

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define COCCL_KDEV_CP_ASYNC 1
using SmemAddr = uint32_t;
__device__ __forceinline__ SmemAddr smemAddr(void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
#else
#define COCCL_KDEV_CP_ASYNC 0
using SmemAddr = uint8_t*;
__device__ __forceinline__ SmemAddr smemAddr(void* p) {
  return static_cast<uint8_t*>(p);
}
#endif

__device__ __forceinline__ void stageCopy16(SmemAddr dst, const void* src) {
#if COCCL_KDEV_CP_ASYNC
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
#else
  *reinterpret_cast<uint4*>(dst) = *static_cast<const uint4*>(src);
#endif
}

__device__ __forceinline__ void stageCopy4(SmemAddr dst, const void* src) {
#if COCCL_KDEV_CP_ASYNC
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
#else
  *reinterpret_cast<uint32_t*>(dst) = *static_cast<const uint32_t*>(src);
#endif
}

// Closes the group of copies issued since the last commit (an empty group is fine).
__device__ __forceinline__ void stageCommit() {
#if COCCL_KDEV_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N groups of this lane's copies are pending, then syncs the warp.
template <int N>
__device__ __forceinline__ void stageWait() {
#if COCCL_KDEV_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
  __syncwarp();
}

__device__ __forceinline__ uint4 stageLoad16(SmemAddr a) {
#if COCCL_KDEV_CP_ASYNC
  uint4 r;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "r"(a)
               : "memory");
  return r;
#else
  return *reinterpret_cast<const uint4*>(a);
#endif
}

__device__ __forceinline__ uint2 stageLoad8(SmemAddr a) {
#if COCCL_KDEV_CP_ASYNC
  uint2 r;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(r.x), "=r"(r.y) : "r"(a) : "memory");
  return r;
#else
  return *reinterpret_cast<const uint2*>(a);
#endif
}

__device__ __forceinline__ uint32_t stageLoad4(SmemAddr a) {
#if COCCL_KDEV_CP_ASYNC
  uint32_t r;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(r) : "r"(a) : "memory");
  return r;
#else
  return *reinterpret_cast<const uint32_t*>(a);
#endif
}

// A warp's tiles: 32/L blocks, G * 32/L = 32 * E elements, kCodeBytes of codes and kMetaBytes
// of scale words in the payload.
template <class S>
struct TileGeom {
  static constexpr int kBlocks = 32 / S::kL;
  static constexpr int kElems = kBlocks * S::kG;
  static constexpr int kCodeBytes = static_cast<int>(tileGeometry<S>().codeBytes(kBlocks));
  static constexpr int kMetaBytes = kBlocks * tileGeometry<S>().metaBytes;
};

// Encode stage: the typed input of one tile, lane l copying the 16-byte chunks l, l + 32, ...
template <class S, class Tag>
struct EncodeStage {
  using T = typename Tag::T;
  static constexpr int kTileBytes = TileGeom<S>::kElems * static_cast<int>(sizeof(T));
  static constexpr int kChunks = kTileBytes / 16;
  static constexpr int kStages = kTileBytes <= 2048 ? 3 : 2;
  static constexpr int kBytes = kStages * kTileBytes;  // a warp
  static_assert(kTileBytes % 16 == 0, "staged copies are 16-byte vectors");

  // Copies the tile at src (16-byte aligned) to the buffer at dst.
  __device__ __forceinline__ static void copy(SmemAddr dst, const uint8_t* src, int lane) {
    dst += 16 * lane;
    src += 16 * lane;
#pragma unroll
    for (int i = 0; i < (kChunks + 31) / 32; ++i)
      if (kChunks % 32 == 0 || i * 32 + lane < kChunks) stageCopy16(dst + 512 * i, src + 512 * i);
  }
  // Offset of the lane's first run in a buffer (runs j > 0 follow at j * L * 16 bytes).
  __device__ __forceinline__ static int readOffset(int group, int lig) {
    return (group * S::kG + S::runStart(0, lig)) * static_cast<int>(sizeof(T));
  }
  __device__ __forceinline__ static void read(SmemAddr a, float (&v)[S::kE1][S::kE0]) {
    {
      uint4 r[S::kE1];
#pragma unroll
      for (int j = 0; j < S::kE1; ++j) r[j] = stageLoad16(a + j * S::kL * 16);
#pragma unroll
      for (int j = 0; j < S::kE1; ++j) TileIO<Tag>::unpack(r[j], v[j]);
    }
  }
};

// Decode stage: the codes of one tile, then its scale words (16-byte padded).
template <class S>
struct DecodeStage {
  static constexpr int kWord = tileGeometry<S>().metaBytes;  // one stageCopy4 a block
  static_assert(kWord == 4, "a block's scale word is one 4-byte copy");
  static constexpr int kCodeBytes = TileGeom<S>::kCodeBytes;
  static constexpr int kWordBytes = (TileGeom<S>::kMetaBytes + 15) / 16 * 16;
  static constexpr int kTileBytes = kCodeBytes + kWordBytes;
  static constexpr int kChunks = kCodeBytes / 16;
  static constexpr int kStages = 3;
  static constexpr int kBytes = kStages * kTileBytes;  // a warp
  static_assert(kCodeBytes % 16 == 0, "staged copies are 16-byte vectors");

  // Copies the codes at codes (16-byte aligned) and the kBlocks scale words at words.
  __device__ __forceinline__ static void copy(SmemAddr dst, const uint8_t* codes,
                                              const uint8_t* words, int lane) {
    if (lane < TileGeom<S>::kBlocks)
      stageCopy4(dst + kCodeBytes + kWord * lane, words + kWord * lane);
    dst += 16 * lane;
    codes += 16 * lane;
#pragma unroll
    for (int i = 0; i < (kChunks + 31) / 32; ++i)
      if (kChunks % 32 == 0 || i * 32 + lane < kChunks) stageCopy16(dst + 512 * i, codes + 512 * i);
  }
  __device__ __forceinline__ static int readOffset(int group, int lig) {
    return static_cast<int>(tileGeometry<S>().codesAt(group)) + S::runStart(0, lig);
  }
  __device__ __forceinline__ static int wordOffset(int group) {
    return kCodeBytes + kWord * group;
  }
  // The lane's codes (at a = buffer + readOffset) and its block's scale word (at aw).
  __device__ __forceinline__ static uint32_t read(SmemAddr a, SmemAddr aw,
                                                  uint32_t (&q)[S::kE1][S::kW]) {
#pragma unroll
    for (int j = 0; j < S::kE1; ++j) {
      const SmemAddr p = a + j * S::kL * S::kE0;
      if constexpr (S::kW == 1) {
        q[j][0] = stageLoad4(p);
      } else if constexpr (S::kW == 2) {
        const uint2 t = stageLoad8(p);
        q[j][0] = t.x;
        q[j][1] = t.y;
      } else {
#pragma unroll
        for (int w = 0; w < S::kW; w += 4) {
          const uint4 t = stageLoad16(p + 4 * w);
          q[j][w] = t.x;
          q[j][w + 1] = t.y;
          q[j][w + 2] = t.z;
          q[j][w + 3] = t.w;
        }
      }
    }
    return stageLoad4(aw);
  }
};

}  // namespace kdev
}  // namespace coccl
