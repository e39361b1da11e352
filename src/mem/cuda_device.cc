#include "mem/cuda_device.h"

#include <cuda_runtime.h>

#include "mem/memtype.h"

namespace coccl {

int currentCudaDevice() {
  // Never initialise CUDA here: a process that has not touched CUDA stays fork-safe.
  if (!cudaDriverInitialised()) return -1;
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return dev;
}

uint64_t gpuIdentity(int dev) {
  if (dev < 0) return 0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  uint64_t h = 0xcbf29ce484222325ull;
  for (char b : prop.uuid.bytes) h = (h ^ static_cast<uint8_t>(b)) * 0x100000001b3ull;
  return h == 0 ? 1 : h;
}

}  // namespace coccl
