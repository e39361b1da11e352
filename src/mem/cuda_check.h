// CUDA runtime error handling for host code of the device path: a failing call throws
// coccl::Error(cocclUnhandledCudaError) with the call, the CUDA error name and its string.
#pragma once

#include <cuda_runtime.h>

#include "core/error.h"
#include "core/log.h"

#define COCCL_CUDA_CHECK(call)                                                              \
  do {                                                                                      \
    cudaError_t coccl_cuda_err_ = (call);                                                   \
    if (coccl_cuda_err_ != cudaSuccess) {                                                   \
      (void)cudaGetLastError(); /* clear a non-sticky error so later calls start clean */  \
      ::coccl::throwError(cocclUnhandledCudaError, "%s failed: %s (%s)", #call,             \
                          cudaGetErrorName(coccl_cuda_err_),                                \
                          cudaGetErrorString(coccl_cuda_err_));                             \
    }                                                                                       \
  } while (0)

// For destructors and cleanup paths: logs instead of throwing.
#define COCCL_CUDA_WARN(call)                                                               \
  do {                                                                                      \
    cudaError_t coccl_cuda_err_ = (call);                                                   \
    if (coccl_cuda_err_ != cudaSuccess) {                                                   \
      (void)cudaGetLastError();                                                             \
      COCCL_WARN("%s failed: %s", #call, cudaGetErrorString(coccl_cuda_err_));              \
    }                                                                                       \
  } while (0)

namespace coccl {

// True when `s` is being captured into a CUDA graph (or cannot be asked: the legacy stream
// while another stream captures globally).
inline bool streamCapturing(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &st) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;
  }
  return st != cudaStreamCaptureStatusNone;
}

// Makes `dev` current for the scope (dev < 0: leaves it); restores the previous device. A
// failing cudaSetDevice throws, unless kNoThrow (code that reports errors otherwise).
class DeviceGuard {
 public:
  enum NoThrow { kNoThrow };
  explicit DeviceGuard(int dev) : DeviceGuard(dev, kNoThrow) {
    if (dev >= 0 && dev != prev_) COCCL_CUDA_CHECK(cudaSetDevice(dev));
  }
  DeviceGuard(int dev, NoThrow) {
    if (cudaGetDevice(&prev_) != cudaSuccess) {
      (void)cudaGetLastError();
      prev_ = -1;
    }
    if (dev >= 0 && dev != prev_ && cudaSetDevice(dev) != cudaSuccess) (void)cudaGetLastError();
  }
  ~DeviceGuard() {
    if (prev_ >= 0) (void)cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

}  // namespace coccl
