// The two kernels of the device per-call agreement (staged/call_check.h).
#include "collectives/staged/call_check_kernels.h"
#include "mem/cuda_check.h"

namespace coccl {
namespace {

__global__ void storeDesc(DescWords d, uint64_t* dst, uint64_t* dst2) {
  if (threadIdx.x < 16) dst[threadIdx.x] = dst2[threadIdx.x] = d.w[threadIdx.x];
}

// One block: each thread compares the descriptors of ranks threadIdx.x, +blockDim.x, ... with
// this rank's; the lowest differing rank is found with a shared atomicMin.
__global__ void compareDescs(DescWords mine, const uint64_t* all, int nranks, uint32_t* devFirst,
                             CheckHostState* host, uint64_t* hostDescs) {
  __shared__ int firstDiff;
  if (threadIdx.x == 0) firstDiff = nranks;
  __syncthreads();
  for (int r = static_cast<int>(threadIdx.x); r < nranks; r += static_cast<int>(blockDim.x)) {
    const uint64_t* d = all + static_cast<size_t>(r) * 16;
    bool same = true;
    for (int i = 0; i < 16; ++i) same &= d[i] == mine.w[i];
    if (!same) atomicMin(&firstDiff, r);
  }
  __syncthreads();
  if (firstDiff == nranks) return;
  __shared__ bool first;
  if (threadIdx.x == 0) first = atomicCAS(devFirst, 0u, 1u) == 0u;
  __syncthreads();
  if (!first) return;  // an earlier call's difference stays the one reported
  for (size_t i = threadIdx.x; i < static_cast<size_t>(nranks) * 16; i += blockDim.x)
    hostDescs[i] = all[i];
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {
    host->error = 1u;
    __threadfence_system();
  }
}

}  // namespace

void launchStoreDesc(const DescWords& d, uint64_t* dst, uint64_t* dst2, cudaStream_t s) {
  storeDesc<<<1, 32, 0, s>>>(d, dst, dst2);
  COCCL_CUDA_CHECK(cudaGetLastError());
}

void launchCompareDescs(const DescWords& mine, const uint64_t* all, int nranks, uint32_t* devFirst,
                        CheckHostState* host, uint64_t* hostDescs, cudaStream_t s) {
  compareDescs<<<1, 256, 0, s>>>(mine, all, nranks, devFirst, host, hostDescs);
  COCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace coccl
