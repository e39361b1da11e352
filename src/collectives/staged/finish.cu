// The last step of a staged compressed ReduceScatter (staged_codec.h): the fp32 sum, scaled for
// AVG, converted to the output type exactly as the host path does (src/collectives/host/wire.cc
// finish: scaleFloats, then convertFromFloat); and the fill of an fp32 sum's start value.
#include <cuda_runtime.h>

#include <algorithm>

#include "collectives/staged/staged_codec.h"
#include "core/error.h"
#include "kernels/float_convert.h"

namespace coccl {
namespace {

template <int kType>
__global__ void finishKernel(const float* acc, size_t n, float scale, void* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = acc[i];
    if (scale != 1.0f) v = __fmul_rn(v, scale);
    if (kType == cocclFloat32)
      static_cast<float*>(out)[i] = v;
    else if (kType == cocclBfloat16)
      static_cast<uint16_t*>(out)[i] = kmath::floatToBf16(v);
    else
      static_cast<uint16_t*>(out)[i] = kmath::floatToFp16(v);
  }
}

__global__ void fillKernel(float* acc, size_t n, float value) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    acc[i] = value;
}

void checkLaunch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    COCCL_THROW(cocclUnhandledCudaError, "%s kernel launch: %s", what, cudaGetErrorString(e));
}

int blocksFor(size_t count, int threads) {
  return static_cast<int>(std::min<size_t>((count + threads - 1) / threads, 1024));
}

}  // namespace

void launchFillFloats(float* acc, size_t count, float value, cocclStream_t stream) {
  if (count == 0) return;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  fillKernel<<<blocksFor(count, 256), 256, 0, s>>>(acc, count, value);
  checkLaunch("fill");
}

void launchFinishReduce(const float* acc, size_t count, float scale, cocclDataType_t dt,
                        void* out, cocclStream_t stream) {
  if (count == 0) return;
  const int threads = 256;
  const int blocks = blocksFor(count, threads);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case cocclFloat32: finishKernel<cocclFloat32><<<blocks, threads, 0, s>>>(acc, count, scale, out); break;
    case cocclBfloat16: finishKernel<cocclBfloat16><<<blocks, threads, 0, s>>>(acc, count, scale, out); break;
    case cocclFloat16: finishKernel<cocclFloat16><<<blocks, threads, 0, s>>>(acc, count, scale, out); break;
    default: COCCL_THROW(cocclInvalidArgument, "finish of a compressed reduction: dtype %d", dt);
  }
  checkLaunch("finish");
}

}  // namespace coccl
