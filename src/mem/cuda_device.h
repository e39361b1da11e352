// The CUDA device of the calling thread and the identity of a GPU, asked without ever
// initialising CUDA (fork safety). Host-only builds: -1 and 0.
#pragma once

#include <cstdint>

namespace coccl {

// The CUDA device current on the calling thread when this process already uses CUDA, else -1.
int currentCudaDevice();

// A 64-bit hash of the UUID of CUDA device `dev` (0 when none or unknown): ranks whose hashes
// are equal share one GPU, whatever their device ordinals (CUDA_VISIBLE_DEVICES may differ).
uint64_t gpuIdentity(int dev);

}  // namespace coccl
