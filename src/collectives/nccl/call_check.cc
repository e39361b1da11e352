// Per-call agreement over the NCCL transport (call_check.h).
#include "collectives/nccl/call_check.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "collectives/call_desc.h"
#include "collectives/nccl/call_check_kernels.h"
#include "mem/cuda_check.h"
#include "transport/nccl/nccl_comm.h"

namespace coccl {

struct NcclCallCheck::Impl {
  int p = 0, me = 0;
  uint64_t* dev = nullptr;         // [0, 16): this rank's descriptor; then p x 16 gathered
  uint32_t* devFirst = nullptr;    // inside dev's allocation, after the descriptors
  CheckHostState* host = nullptr;  // mapped: host pointer
  CheckHostState* hostDev = nullptr;
  uint64_t* descs = nullptr;  // mapped: p x 16 words, host pointer
  uint64_t* descsDev = nullptr;

  ~Impl() {
    if (dev) COCCL_CUDA_WARN(cudaFree(dev));
    if (host) COCCL_CUDA_WARN(cudaFreeHost(host));
    if (descs) COCCL_CUDA_WARN(cudaFreeHost(descs));
  }
};

NcclCallCheck::NcclCallCheck(int nranks, int rank) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.p = nranks;
  m.me = rank;
  const size_t words = 16 * (static_cast<size_t>(nranks) + 1);
  void* d = nullptr;
  COCCL_CUDA_CHECK(cudaMalloc(&d, words * 8 + 8));
  m.dev = static_cast<uint64_t*>(d);
  m.devFirst = reinterpret_cast<uint32_t*>(m.dev + words);
  // On a stream of its own: a device-wide synchronisation here could wait on other
  // communicators' kernels that wait on peers still in init.
  cudaStream_t s = nullptr;
  COCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const cudaError_t ms = cudaMemsetAsync(d, 0, words * 8 + 8, s);
  const cudaError_t ss = ms == cudaSuccess ? cudaStreamSynchronize(s) : ms;
  COCCL_CUDA_WARN(cudaStreamDestroy(s));
  COCCL_CUDA_CHECK(ss);
  void* h = nullptr;
  COCCL_CUDA_CHECK(cudaHostAlloc(&h, sizeof(CheckHostState), cudaHostAllocMapped));
  m.host = static_cast<CheckHostState*>(h);
  std::memset(h, 0, sizeof(CheckHostState));
  COCCL_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m.hostDev), h, 0));
  void* hd = nullptr;
  COCCL_CUDA_CHECK(cudaHostAlloc(&hd, static_cast<size_t>(nranks) * 128, cudaHostAllocMapped));
  m.descs = static_cast<uint64_t*>(hd);
  COCCL_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m.descsDev), hd, 0));
}

NcclCallCheck::~NcclCallCheck() = default;

void NcclCallCheck::check(const CallDesc& d, NcclComm& tr, cudaStream_t stream) {
  static_assert(sizeof(CallDesc) == sizeof(DescWords), "descriptor sizes");
  Impl& m = *impl_;
  DescWords w;
  std::memcpy(&w, &d, sizeof(w));
  uint64_t* all = m.dev + 16;
  launchStoreDesc(w, m.dev, stream);
  tr.allGather(m.dev, all, sizeof(CallDesc), cocclUint8, stream);
  launchCompareDescs(w, all, m.p, m.devFirst, m.hostDev, m.descsDev, stream);
}

cocclResult_t NcclCallCheck::error() const {
  return impl_->host->error ? cocclInvalidUsage : cocclSuccess;
}

std::string NcclCallCheck::message() const {
  const Impl& m = *impl_;
  if (!m.host->error) return "";
  std::atomic_thread_fence(std::memory_order_acquire);  // the descriptors after the flag
  std::vector<CallDesc> all(static_cast<size_t>(m.p));
  for (int r = 0; r < m.p; ++r) all[static_cast<size_t>(r)] = callDescFromBytes(m.descs + 16 * r);
  return callDescMismatch(all.data(), m.p);
}

}  // namespace coccl
