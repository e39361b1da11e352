// A device buffer that grows during a run without waiting for the device.
//
// Growing by cudaDeviceSynchronize + cudaFree + cudaMalloc waits for every kernel of the
// process, including another communicator's kernels that wait for a peer, which may itself be
// waiting for this rank: a deadlock between processes (seen with PyTorch's several process
// groups). Here a larger buffer is allocated (cudaMalloc does not wait for kernels) and the old
// one is kept until destruction, since kernels already issued may still read it. Capacity at
// least doubles, so the retired buffers together are never larger than the current one.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "mem/cuda_check.h"

namespace coccl {

class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  // The owner has quiesced its device work; cudaFree waits for the device's kernels anyway.
  ~DeviceScratch() { release(); }
  // Frees every buffer now (call it with the owner's device current).
  void release() {
    for (void* p : retired_) COCCL_CUDA_WARN(cudaFree(p));
    retired_.clear();
    if (cur_) COCCL_CUDA_WARN(cudaFree(cur_));
    cur_ = nullptr;
    bytes_ = 0;
  }
  bool fits(size_t bytes) const { return bytes <= bytes_; }
  // At least `bytes` (cudaUnhandledCudaError when the device is out of memory). The caller
  // refuses a growth during a stream capture (cudaMalloc there would not be replayed).
  void* grow(size_t bytes) {
    if (fits(bytes)) return cur_;
    const size_t want = bytes < 2 * bytes_ ? 2 * bytes_ : bytes;
    void* p = nullptr;
    COCCL_CUDA_CHECK(cudaMalloc(&p, want));
    if (cur_) retired_.push_back(cur_);
    cur_ = p;
    bytes_ = want;
    return cur_;
  }
  void* ptr() const { return cur_; }
  size_t bytes() const { return bytes_; }

 private:
  void* cur_ = nullptr;
  size_t bytes_ = 0;
  std::vector<void*> retired_;
};

}  // namespace coccl
