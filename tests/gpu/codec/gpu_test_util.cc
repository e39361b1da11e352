#include "gpu_test_util.h"

#include <cuda_runtime.h>

#include <stdexcept>

namespace coccl {
namespace test {

bool gpuAvailable() {
  static const bool ok = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      std::printf("[codec gpu] no CUDA device (%s): the GPU tests skip\n", cudaGetErrorString(e));
      return false;
    }
    if (n > 0) {
      cudaDeviceProp prop;
      if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        std::printf("[codec gpu] device 0: %s, sm_%d%d, %d SMs\n", prop.name, prop.major,
                    prop.minor, prop.multiProcessorCount);
    }
    return n > 0;
  }();
  return ok;
}

void cudaCheck(int err, const char* what) {
  if (err != 0)
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(static_cast<cudaError_t>(err)));
}

DevBuf::DevBuf(size_t bytes, int fill) : n_(bytes) {
  cudaCheck(cudaMalloc(&p_, bytes > 0 ? bytes : 1), "cudaMalloc");
  cudaCheck(cudaMemset(p_, fill, bytes > 0 ? bytes : 1), "cudaMemset");
}

DevBuf::~DevBuf() {
  if (p_ != nullptr) (void)cudaFree(p_);
}

DevBuf DevBuf::from(const std::vector<uint8_t>& host, size_t extra, size_t offset) {
  DevBuf b(host.size() + extra + offset);
  if (!host.empty())
    cudaCheck(cudaMemcpy(b.p_ + offset, host.data(), host.size(), cudaMemcpyHostToDevice),
              "cudaMemcpy H2D");
  cudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the DMA has landed
  return b;
}

std::vector<uint8_t> DevBuf::download(size_t offset, size_t bytes) const {
  std::vector<uint8_t> h(bytes);
  cudaCheck(cudaDeviceSynchronize(), "kernel");
  if (bytes > 0)
    cudaCheck(cudaMemcpy(h.data(), p_ + offset, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return h;
}

void deviceSync() {
  cudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace test
}  // namespace coccl
