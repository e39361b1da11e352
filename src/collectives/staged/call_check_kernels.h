// The kernels of the device per-call agreement (staged/call_check.h), launched on a stream.
// Throw Error when a launch fails.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace coccl {

// A call descriptor's 128 bytes (CallDesc), passed by value as a kernel argument.
struct DescWords {
  uint64_t w[16];
};

// Mapped host memory (cudaHostAllocMapped) the compare kernel reports into.
struct CheckHostState {
  volatile uint32_t error;  // 0, or 1 once a difference was seen (then hostDescs is filled)
};

// d -> dst[0..16) and dst2[0..16).
void launchStoreDesc(const DescWords& d, uint64_t* dst, uint64_t* dst2, cudaStream_t s);
// Compares all[r * 16 .. r * 16 + 16) of every rank r with `mine`. On the first difference of
// the communicator (devFirst: a device word, 0 until then) copies all nranks x 16 words to
// hostDescs, then sets host->error.
void launchCompareDescs(const DescWords& mine, const uint64_t* all, int nranks, uint32_t* devFirst,
                        CheckHostState* host, uint64_t* hostDescs, cudaStream_t s);

}  // namespace coccl
