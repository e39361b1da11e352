// The None codec's reductions on the device (payload = the raw elements of dt): element-wise,
// in the host NoneCodec's order (fp32 accumulation in rank order, scale, RNE to dt).
#pragma once

#include "kernels/cuda/codec_kernels.cuh"

namespace coccl {
namespace kernels {
namespace detail {

constexpr int kNoneElemsPerThread = 4;

struct NoneArgs {
  const void* ins[kMaxReduceInputs];
  int p;
  int self;
  const void* selfIn;
  size_t n;
  float scale;
  void* out;  // kAccumulate: the fp32 accumulator; else the reduced elements (dt)
  void* decoded;
};

// kAccumulate: out[i] = out[i] + ins[0][i] + ... (decodeAccumulate). Otherwise
// out[i] = decoded[i] = RNE_dt(scale * sum_r (r == self ? selfIn : ins[r])[i]).
template <class Tag, bool kAccumulate>
__global__ void __launch_bounds__(kThreads) noneKernel(const __grid_constant__ NoneArgs a) {
  using T = typename Tag::T;
  using IO = kdev::TileIO<Tag>;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n;
       i += stride) {
    if constexpr (kAccumulate) {
      float* acc = static_cast<float*>(a.out);
      float s = acc[i];
      for (int r = 0; r < a.p; ++r)
        s = kmath::addRn(s, IO::load(static_cast<const T*>(a.ins[r])[i]));
      acc[i] = s;
    } else {
      float s = 0.0f;
      for (int r = 0; r < a.p; ++r) {
        const T* src = static_cast<const T*>(r == a.self ? a.selfIn : a.ins[r]);
        const float v = IO::load(src[i]);
        s = r == 0 ? v : kmath::addRn(s, v);
      }
      if (a.scale != 1.0f) s = kmath::mulRn(s, a.scale);
      const T o = IO::store(s);
      static_cast<T*>(a.out)[i] = o;
      if (a.decoded != nullptr) static_cast<T*>(a.decoded)[i] = o;
    }
  }
}

size_t elemBytes(cocclDataType_t dt);
void noneCopy(const void* in, void* out, size_t bytes, cudaStream_t stream, const char* what);
void noneReduce(const void* const* ins, int p, int self, const void* selfIn, cocclDataType_t dt,
                size_t n, float scale, bool accumulate, void* out, void* decoded,
                cudaStream_t stream, const char* what);

}  // namespace detail
}  // namespace kernels
}  // namespace coccl
