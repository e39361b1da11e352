// Device-side input generation for the GPU tests: writes hostPattern()'s values (small integers,
// exact in every type) without a host synchronisation, so that back-to-back tests can change
// the input of every call.
#include <cuda_runtime.h>

#include <cstdint>

#include "coccl.h"
#include "kernels/float_convert.h"

namespace coccl::test {
namespace {

__global__ void fillKernel(void* buf, size_t n, int dt, int a, int b) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int x = (a % 9 - 4) * (1 + static_cast<int>(i % 3)) + b;
    switch (dt) {
      case cocclFloat32: static_cast<float*>(buf)[i] = static_cast<float>(x); break;
      case cocclBfloat16:
        static_cast<uint16_t*>(buf)[i] = kmath::floatToBf16(static_cast<float>(x));
        break;
      case cocclFloat16:
        static_cast<uint16_t*>(buf)[i] = kmath::floatToFp16(static_cast<float>(x));
        break;
      case cocclInt32: static_cast<int32_t*>(buf)[i] = x; break;
      default: break;
    }
  }
}

}  // namespace

cudaError_t fillPattern(void* buf, size_t n, cocclDataType_t dt, int a, int b, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const size_t blocks = (n + 255) / 256;
  fillKernel<<<blocks < 1024 ? static_cast<unsigned>(blocks) : 1024u, 256, 0, s>>>(buf, n, dt, a,
                                                                                   b);
  return cudaGetLastError();
}

}  // namespace coccl::test
