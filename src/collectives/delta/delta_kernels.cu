// The subtraction and the typed addition of the device difference mode (delta_device.h), with
// the element rule of kernels/delta_math.h (compiled with --fmad=false; the rule spells
// __fadd_rn / __fsub_rn anyway).
#include <cuda_runtime.h>

#include <algorithm>

#include "collectives/delta/delta_device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/delta_math.h"

namespace coccl {
namespace {

template <int kType>
__global__ void diffKernel(const void* next, const void* prev, size_t n, float* d) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    d[i] = kmath::deltaDiff<kType>(next, prev, i);
}

template <int kType>
__global__ void applyKernel(void* out, const float* dec, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    kmath::deltaApply<kType>(out, i, dec[i]);
}

int blocksFor(size_t n) {
  return static_cast<int>(std::max<size_t>(1, std::min<size_t>((n + 255) / 256, 2048)));
}

void checkLaunch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    COCCL_THROW(cocclUnhandledCudaError, "AllGatherDelta %s kernel launch: %s", what,
                cudaGetErrorString(e));
}

}  // namespace

void launchDeltaDiff(const void* next, const void* prev, cocclDataType_t dt, size_t n, float* d,
                     cocclStream_t stream) {
  if (n == 0) return;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  const int b = blocksFor(n);
  switch (dt) {
    case cocclFloat32:
      diffKernel<cocclFloat32><<<b, 256, 0, s>>>(next, prev, n, d);
      break;
    case cocclFloat16:
      diffKernel<cocclFloat16><<<b, 256, 0, s>>>(next, prev, n, d);
      break;
    case cocclBfloat16:
      diffKernel<cocclBfloat16><<<b, 256, 0, s>>>(next, prev, n, d);
      break;
    default:
      COCCL_THROW(cocclInternalError, "AllGatherDelta: difference of %s", dtypeName(dt));
  }
  checkLaunch("difference");
}

void launchDeltaApply(void* out, const float* dec, cocclDataType_t dt, size_t n,
                      cocclStream_t stream) {
  if (n == 0) return;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  const int b = blocksFor(n);
  switch (dt) {
    case cocclFloat32:
      applyKernel<cocclFloat32><<<b, 256, 0, s>>>(out, dec, n);
      break;
    case cocclFloat16:
      applyKernel<cocclFloat16><<<b, 256, 0, s>>>(out, dec, n);
      break;
    case cocclBfloat16:
      applyKernel<cocclBfloat16><<<b, 256, 0, s>>>(out, dec, n);
      break;
    default:
      COCCL_THROW(cocclInternalError, "AllGatherDelta: addition to %s", dtypeName(dt));
  }
  checkLaunch("addition");
}

}  // namespace coccl
