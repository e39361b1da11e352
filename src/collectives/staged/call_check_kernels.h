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

// d -> dst[0..16), dst2[0..16) and, where `heads` is not null, the 128 bytes at
// heads + j * headStride for every rank j != me of nranks (headStride 0: once, at heads).
// Every address 8-byte aligned.
void launchStoreDesc(const DescWords& d, uint64_t* dst, uint64_t* dst2, char* heads,
                     size_t headStride, int nranks, int me, cudaStream_t s);
// Compares the descriptor of every rank r (16 words at base + r * stride; rank me's at self)
// with `mine`. On the first difference of the communicator (devFirst: a device word, 0 until
// then) copies the nranks x 16 words to hostDescs in rank order, then sets host->error.
void launchCompareDescs(const DescWords& mine, const char* base, size_t stride,
                        const uint64_t* self, int me, int nranks, uint32_t* devFirst,
                        CheckHostState* host, uint64_t* hostDescs, cudaStream_t s);

}  // namespace coccl
