// tah device operations, bit for bit the host's (tah_host.cc) from the same scalar math
// (tah_math.h, --fmad=false, _rn intrinsics). The tile kernels work on batches of 32 tiles a
// warp, a lane a tile, through shared memory (tah_slab.cuh); tiles that need the 64-point
// transform go to groups of 8 lanes (tah_group.cuh). Encode (tah_encode.cuh): the tiles'
// entropy sums, the rows' keys (one thread a row; select=group: a warp a group of 32 rows,
// which writes the group's header words), select=message's 3-bit row selection (one CTA: radix
// select of the n3-th key, ties by index, then the bit map and prefixes; tah_select.cuh), the
// tiles; decode is one kernel (tah_decode.cuh). Launchers only enqueue on `stream`.
#include <cuda_runtime.h>

#include "tah_codec.h"
#include "tah_math.h"

namespace {

constexpr int kSelectThreads = 1024;

struct Inputs {
  const uint8_t* p[TAH_MAX_INPUTS];
};

// A launch's geometry, computed once on the host (tah_layout has 64-bit divisions, which cost a
// thread more than its elements' work).
struct Geo {
  tah_layout_t L;
  size_t count;
  uint32_t R, T;  // elements and tiles of a row
  uint32_t low;   // the instance's lowL
};

Geo geoOf(const tah_instance_t* t, size_t count) {
  Geo g;
  g.L = tah_layout(count, t->row, t->lowL);
  g.count = count;
  g.R = t->row;
  g.T = t->row / TAH_TILE;
  g.low = t->lowL;
  return g;
}

const tah_instance_t* inst(const void* p) {
  return static_cast<const tah_instance_t*>(p);
}
size_t pad256(size_t n) {
  return (n + 255) & ~static_cast<size_t>(255);
}
unsigned gridFor(size_t items, size_t per) {
  return static_cast<unsigned>((items + per - 1) / per);
}

// Each needs the ones before it:
// clang-format off
#include "tah_slab.cuh"
#include "tah_group.cuh"
#include "tah_encode.cuh"
#include "tah_decode.cuh"
// clang-format on

bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

#ifndef COCCL_DEVICE_EMULATION  // test_tah_device_emulated.cc (tests/plugins/tah) launches
                                // the kernels above as host code (tests/gpu/emu) itself
int launched() {
  return cudaGetLastError() == cudaSuccess ? COCCL_CODEC_OK : COCCL_CODEC_E_CUDA;
}

// CTAs for a tile kernel: one a kWarps batches of kBatch tiles, at most the resident grid (the
// kernel's occupancy times the current device's multiprocessors).
template <auto Kernel>
unsigned residentGrid(const Geo& g) {
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
  const size_t need = gridFor(g.L.tiles, static_cast<size_t>(kBatch) * kWarps);
  const size_t cap = static_cast<size_t>(perSm) * static_cast<size_t>(sms);
  return static_cast<unsigned>(need < 1 ? 1 : (need < cap ? need : cap));
}

// The encode workspace `ws` (256-aligned): the rows' keys, then the tiles' sums.
uint32_t* keysIn(void* ws) {
  return static_cast<uint32_t*>(ws);
}
float2* sumsIn(void* ws, const tah_layout_t& L) {
  return reinterpret_cast<float2*>(static_cast<char*>(ws) + pad256(4 * L.rows));
}

int encodeOn(const tah_instance_t* t, const void* in, int dtype, size_t count, float scale,
             uint8_t* out, void* ws, cudaStream_t stream) {
  const Geo g = geoOf(t, count);
  const bool vec = aligned16(in), group = t->scope == TAH_SCOPE_GROUP;
  uint32_t* keys = keysIn(ws);
  uint32_t* hdr = reinterpret_cast<uint32_t*>(out);
  if (g.L.n3 > 0) {
    float2* sums = sumsIn(ws, g.L);
    tileSumsKernel<<<residentGrid<tileSumsKernel>(g), kThreads, 0, stream>>>(in, dtype, g, scale,
                                                                             vec, sums);
    if (launched()) return COCCL_CODEC_E_CUDA;
    rowKeysKernel<<<gridFor(g.L.rows, 256), 256, 0, stream>>>(sums, g, keys, group ? hdr : nullptr);
    if (launched()) return COCCL_CODEC_E_CUDA;
  }
  if (!group || g.L.n3 == 0) {  // select=message's header (or every group's words zero)
    selectKernel<<<1, kSelectThreads, 0, stream>>>(keys, static_cast<uint32_t>(g.L.rows),
                                                   static_cast<uint32_t>(g.L.n3), hdr);
    if (launched()) return COCCL_CODEC_E_CUDA;
  }
  encodeTilesKernel<<<residentGrid<encodeTilesKernel>(g), kThreads, 0, stream>>>(
      in, dtype, g, scale, t->had != 0, vec, out);
  return launched();
}

template <int Mode>
int decodeMode(const Inputs& ins, int n, int self, const void* selfIn, float scale, const Geo& g,
               int dtype, bool vec, void* out, cudaStream_t stream) {
  decodeTilesKernel<Mode><<<residentGrid<decodeTilesKernel<Mode>>(g), kThreads, 0, stream>>>(
      ins, n, self, selfIn, scale, g, dtype, vec, out);
  return launched();
}

int decodeOn(const tah_instance_t* t, const Inputs& ins, int n, int mode, int self,
             const void* selfIn, float scale, size_t count, int dtype, void* out,
             cudaStream_t stream) {
  const Geo g = geoOf(t, count);
  const bool vec = aligned16(out) && (mode != 2 || aligned16(selfIn));
  if (mode == 0) return decodeMode<0>(ins, n, self, selfIn, scale, g, dtype, vec, out, stream);
  if (mode == 1) return decodeMode<1>(ins, n, self, selfIn, scale, g, dtype, vec, out, stream);
  return decodeMode<2>(ins, n, self, selfIn, scale, g, dtype, vec, out, stream);
}

#endif  // COCCL_DEVICE_EMULATION

}  // namespace

#ifndef COCCL_DEVICE_EMULATION

extern "C" size_t tah_device_workspace(const tah_instance_t* t, size_t count, int p) {
  const tah_layout_t L = tah_layout(count, t->row, t->lowL);
  return (p >= 2 ? pad256(4 * count) : 0) + pad256(4 * L.rows) + 8 * L.tiles;
}

extern "C" int tah_device_encode(const void* instance, const void* in, int dtype, size_t count,
                                 void* out, void* ws, cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || !in || !out || !ws || tah_count_ok(t, count))
    return COCCL_CODEC_E_INVALID;
  return encodeOn(t, in, dtype, count, 1.0f, static_cast<uint8_t*>(out), ws, stream);
}

extern "C" int tah_device_decode(const void* instance, const void* in, size_t count, int dtype,
                                 void* out, void*, cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || !in || !out || tah_count_ok(t, count)) return COCCL_CODEC_E_INVALID;
  Inputs p{};
  p.p[0] = static_cast<const uint8_t*>(in);
  return decodeOn(t, p, 1, 0, 0, nullptr, 1.0f, count, dtype, out, stream);
}

extern "C" int tah_device_decode_accumulate(const void* instance, const void* const* ins, int n,
                                            size_t count, int dtype, float* acc, void*,
                                            cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || !ins || !acc || n < 1 || n > TAH_MAX_INPUTS || tah_count_ok(t, count))
    return COCCL_CODEC_E_INVALID;
  Inputs p{};
  for (int k = 0; k < n; ++k) {
    if (!ins[k]) return COCCL_CODEC_E_INVALID;
    p.p[k] = static_cast<const uint8_t*>(ins[k]);
  }
  return decodeOn(t, p, n, 1, 0, nullptr, 1.0f, count, dtype, acc, stream);
}

extern "C" int tah_device_decode_reduce_encode(const void* instance, const void* const* ins, int p,
                                               int self, const void* selfIn, int dtype,
                                               size_t count, float scale, void* out, void* decoded,
                                               void* ws, cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || p < 1 || p > TAH_MAX_INPUTS || self < 0 || self >= p || !selfIn ||
      !out || !ws || (p > 1 && !ins) || tah_count_ok(t, count))
    return COCCL_CODEC_E_INVALID;
  Inputs in{};
  for (int r = 0; r < p; ++r) {
    if (r == self) continue;
    if (!ins[r]) return COCCL_CODEC_E_INVALID;
    in.p[r] = static_cast<const uint8_t*>(ins[r]);
  }
  int rc;
  if (p == 1) {  // acc = selfIn * scale: encoded on the fly (workspace: the encode's only)
    rc = encodeOn(t, selfIn, dtype, count, scale, static_cast<uint8_t*>(out), ws, stream);
  } else {
    float* acc = static_cast<float*>(ws);
    rc = decodeOn(t, in, p, 2, self, selfIn, scale, count, dtype, acc, stream);
    if (rc == COCCL_CODEC_OK)
      rc = encodeOn(t, acc, TAH_DT_F32, count, 1.0f, static_cast<uint8_t*>(out),
                    static_cast<char*>(ws) + pad256(4 * count), stream);
  }
  if (rc == COCCL_CODEC_OK && decoded) {
    Inputs o{};
    o.p[0] = static_cast<const uint8_t*>(out);
    rc = decodeOn(t, o, 1, 0, 0, nullptr, 1.0f, count, dtype, decoded, stream);
  }
  return rc;
}
#endif  // COCCL_DEVICE_EMULATION
