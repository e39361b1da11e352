// The two kernels of the device per-call agreement (staged/call_check.h).
#include "collectives/staged/call_check_kernels.h"
#include "mem/cuda_check.h"

namespace coccl {
namespace {

// One block; thread t writes word t % 16 of destinations t / 16, + blockDim.x / 16, ...:
// dst, dst2, then the heads of the ranks j != me (one head when headStride is 0).
__global__ void storeDesc(DescWords d, uint64_t* dst, uint64_t* dst2, char* heads,
                          size_t headStride, int nranks, int me) {
  const int word = static_cast<int>(threadIdx.x % 16);
  const int nheads = heads ? (headStride ? nranks : 1) : 0;
  for (int t = static_cast<int>(threadIdx.x / 16); t < 2 + nheads;
       t += static_cast<int>(blockDim.x / 16)) {
    if (t >= 2 && headStride && t - 2 == me) continue;
    uint64_t* to =
        t == 0   ? dst
        : t == 1 ? dst2
                 : reinterpret_cast<uint64_t*>(heads + static_cast<size_t>(t - 2) * headStride);
    to[word] = d.w[word];
  }
}

__device__ const uint64_t* descOf(const char* base, size_t stride, const uint64_t* self, int me,
                                  int r) {
  return r == me ? self : reinterpret_cast<const uint64_t*>(base + static_cast<size_t>(r) * stride);
}

// One block: each thread compares the descriptors of ranks threadIdx.x, +blockDim.x, ... with
// this rank's; the lowest differing rank is found with a shared atomicMin.
__global__ void compareDescs(DescWords mine, const char* base, size_t stride, const uint64_t* self,
                             int me, int nranks, uint32_t* devFirst, CheckHostState* host,
                             uint64_t* hostDescs) {
  __shared__ int firstDiff;
  if (threadIdx.x == 0) firstDiff = nranks;
  __syncthreads();
  for (int r = static_cast<int>(threadIdx.x); r < nranks; r += static_cast<int>(blockDim.x)) {
    const uint64_t* d = descOf(base, stride, self, me, r);
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
    hostDescs[i] = descOf(base, stride, self, me, static_cast<int>(i / 16))[i % 16];
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {
    host->error = 1u;
    __threadfence_system();
  }
}

}  // namespace

void launchStoreDesc(const DescWords& d, uint64_t* dst, uint64_t* dst2, char* heads,
                     size_t headStride, int nranks, int me, cudaStream_t s) {
  storeDesc<<<1, 256, 0, s>>>(d, dst, dst2, heads, headStride, nranks, me);
  COCCL_CUDA_CHECK(cudaGetLastError());
}

void launchCompareDescs(const DescWords& mine, const char* base, size_t stride,
                        const uint64_t* self, int me, int nranks, uint32_t* devFirst,
                        CheckHostState* host, uint64_t* hostDescs, cudaStream_t s) {
  compareDescs<<<1, 256, 0, s>>>(mine, base, stride, self, me, nranks, devFirst, host, hostDescs);
  COCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace coccl
