// Host-only builds: no CUDA.
#include "mem/cuda_device.h"

namespace coccl {

int currentCudaDevice() { return -1; }
uint64_t gpuIdentity(int) { return 0; }

}  // namespace coccl
