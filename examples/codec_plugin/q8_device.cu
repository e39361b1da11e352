// q8 device operations: simple kernels, bit for bit the host's (q8_host.cc), from the same
// scalar math (q8_math.h, compiled with --fmad=false). Encoding kernels run one warp per block
// (lane l holds elements l, l + 32, ... of it); decoding kernels one thread per element. Every
// launcher only enqueues on `stream` (no allocation, no synchronisation: legal under graph
// capture) and returns COCCL_CODEC_E_CUDA when the launch fails.
#include <cuda_runtime.h>

#include "q8_codec.h"
#include "q8_math.h"

namespace {

constexpr int kWarpsPerCta = 8;
constexpr int kThreads = 256;

// The peers' payload pointers, passed by value (the `ins` array of the ABI is host memory).
struct Inputs {
  const uint8_t* p[Q8_MAX_INPUTS];
};

unsigned gridFor(size_t items, size_t perCta) {
  return static_cast<unsigned>((items + perCta - 1) / perCta);
}

// Encodes one block held by a warp: v[j] is element lane + 32 j (0 past n), G / 32 per lane.
template <int G>
__device__ void encodeWarpBlock(const float (&v)[G / 32], size_t n, size_t nb, size_t b,
                                uint8_t* out) {
  const int lane = threadIdx.x & 31;
  float absmax = 0.0f;
  int nonfinite = 0;
  for (int j = 0; j < G / 32; ++j) {
    nonfinite |= q8_is_nonfinite(v[j]);
    absmax = q8_max(absmax, q8_absmax_term(v[j]));
  }
  for (int o = 16; o > 0; o >>= 1) absmax = q8_max(absmax, __shfl_xor_sync(0xffffffffu, absmax, o));
  nonfinite = __any_sync(0xffffffffu, nonfinite);
  const float scale = q8_scale(absmax, nonfinite);
  int8_t* codes = reinterpret_cast<int8_t*>(out + b * G);
  for (int j = 0; j < G / 32; ++j) {
    const size_t i = lane + 32 * j;
    codes[i] = i < n ? q8_code(v[j], scale) : 0;
  }
  if (lane == 0) memcpy(out + nb * G + 4 * b, &scale, 4);
}

template <int G>
__global__ void encodeKernel(const void* in, int dtype, size_t count, uint8_t* out) {
  const size_t nb = q8_blocks(count, G);
  const size_t b = static_cast<size_t>(blockIdx.x) * kWarpsPerCta + threadIdx.x / 32;
  if (b >= nb) return;  // whole warps leave together
  const int lane = threadIdx.x & 31;
  const size_t base = b * G, n = count - base < G ? count - base : G;
  float v[G / 32];
  for (int j = 0; j < G / 32; ++j) {
    const size_t i = lane + 32 * j;
    v[j] = i < n ? q8_load(in, dtype, base + i) : 0.0f;
  }
  encodeWarpBlock<G>(v, n, nb, b, out);
}

__global__ void decodeKernel(const uint8_t* in, size_t count, int g, int dtype, void* out) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const size_t nb = q8_blocks(count, g);
  q8_store(out, dtype, i, q8_value(static_cast<int8_t>(in[i]), q8_load_scale(in, nb, g, i / g)));
}

__global__ void decodeAccumulateKernel(Inputs ins, int n, size_t count, int g, float* acc) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const size_t nb = q8_blocks(count, g);
  float a = acc[i];
  for (int k = 0; k < n; ++k)
    a = Q8_ADD(a, q8_value(static_cast<int8_t>(ins.p[k][i]), q8_load_scale(ins.p[k], nb, g, i / g)));
  acc[i] = a;
}

template <int G>
__global__ void decodeReduceEncodeKernel(Inputs ins, int p, int self, const void* selfIn,
                                         int dtype, size_t count, float scale, uint8_t* out,
                                         void* decoded) {
  const size_t nb = q8_blocks(count, G);
  const size_t b = static_cast<size_t>(blockIdx.x) * kWarpsPerCta + threadIdx.x / 32;
  if (b >= nb) return;
  const int lane = threadIdx.x & 31;
  const size_t base = b * G, n = count - base < G ? count - base : G;
  float v[G / 32];
  for (int j = 0; j < G / 32; ++j) {
    const size_t i = lane + 32 * j;
    float acc = 0.0f;  // zero padding past n, as the host's encode of the fp32 sum sees it
    if (i < n) {
      for (int r = 0; r < p; ++r) {
        const float z = r == self ? q8_load(selfIn, dtype, base + i)
                                  : q8_value(static_cast<int8_t>(ins.p[r][base + i]),
                                             q8_load_scale(ins.p[r], nb, G, b));
        acc = r == 0 ? z : Q8_ADD(acc, z);
      }
      if (scale != 1.0f) acc = Q8_MUL(acc, scale);
    }
    v[j] = acc;
  }
  // selfIn may equal decoded: every lane has read its elements; the warp's block is written
  // only after this barrier
  __syncwarp();
  encodeWarpBlock<G>(v, n, nb, b, out);
  if (decoded == nullptr) return;
  __syncwarp();  // the codes and scale written above are visible to the whole warp
  const float s = q8_load_scale(out, nb, G, b);
  for (int j = 0; j < G / 32; ++j) {
    const size_t i = lane + 32 * j;
    if (i < n) q8_store(decoded, dtype, base + i, q8_value(static_cast<int8_t>(out[base + i]), s));
  }
}

int launched() { return cudaGetLastError() == cudaSuccess ? COCCL_CODEC_OK : COCCL_CODEC_E_CUDA; }

int blockOf(const void* instance) {
  return static_cast<int>(static_cast<const q8_instance_t*>(instance)->block);
}

}  // namespace

extern "C" int q8_device_encode(const void* instance, const void* in, int dtype, size_t count,
                                void* out, void*, cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  if (!q8_dtype_ok(dtype) || !in || !out) return COCCL_CODEC_E_INVALID;
  const int g = blockOf(instance);
  const unsigned grid = gridFor(q8_blocks(count, g), kWarpsPerCta);
  uint8_t* o = static_cast<uint8_t*>(out);
  if (g == 32) encodeKernel<32><<<grid, kThreads, 0, stream>>>(in, dtype, count, o);
  else if (g == 64) encodeKernel<64><<<grid, kThreads, 0, stream>>>(in, dtype, count, o);
  else encodeKernel<128><<<grid, kThreads, 0, stream>>>(in, dtype, count, o);
  return launched();
}

extern "C" int q8_device_decode(const void* instance, const void* in, size_t count, int dtype,
                                void* out, void*, cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  if (!q8_dtype_ok(dtype) || !in || !out) return COCCL_CODEC_E_INVALID;
  decodeKernel<<<gridFor(count, kThreads), kThreads, 0, stream>>>(
      static_cast<const uint8_t*>(in), count, blockOf(instance), dtype, out);
  return launched();
}

extern "C" int q8_device_decode_accumulate(const void* instance, const void* const* ins, int n,
                                           size_t count, int dtype, float* acc, void*,
                                           cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  if (!q8_dtype_ok(dtype) || !ins || !acc || n < 1 || n > Q8_MAX_INPUTS)
    return COCCL_CODEC_E_INVALID;
  Inputs p{};
  for (int k = 0; k < n; ++k) {
    if (!ins[k]) return COCCL_CODEC_E_INVALID;
    p.p[k] = static_cast<const uint8_t*>(ins[k]);
  }
  decodeAccumulateKernel<<<gridFor(count, kThreads), kThreads, 0, stream>>>(
      p, n, count, blockOf(instance), acc);
  return launched();
}

extern "C" int q8_device_decode_reduce_encode(const void* instance, const void* const* ins, int p,
                                              int self, const void* selfIn, int dtype,
                                              size_t count, float scale, void* out,
                                              void* decoded, void*, cudaStream_t stream) {
  if (count == 0) return COCCL_CODEC_OK;
  if (!q8_dtype_ok(dtype) || p < 1 || p > Q8_MAX_INPUTS || self < 0 || self >= p || !selfIn ||
      !out || (p > 1 && !ins))
    return COCCL_CODEC_E_INVALID;
  Inputs in{};
  for (int r = 0; r < p; ++r) {
    if (r == self) continue;
    if (!ins[r]) return COCCL_CODEC_E_INVALID;
    in.p[r] = static_cast<const uint8_t*>(ins[r]);
  }
  const int g = blockOf(instance);
  const unsigned grid = gridFor(q8_blocks(count, g), kWarpsPerCta);
  uint8_t* o = static_cast<uint8_t*>(out);
  if (g == 32)
    decodeReduceEncodeKernel<32><<<grid, kThreads, 0, stream>>>(in, p, self, selfIn, dtype, count,
                                                                scale, o, decoded);
  else if (g == 64)
    decodeReduceEncodeKernel<64><<<grid, kThreads, 0, stream>>>(in, p, self, selfIn, dtype, count,
                                                                scale, o, decoded);
  else
    decodeReduceEncodeKernel<128><<<grid, kThreads, 0, stream>>>(in, p, self, selfIn, dtype,
                                                                 count, scale, o, decoded);
  return launched();
}
