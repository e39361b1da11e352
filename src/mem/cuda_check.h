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

// Makes `dev` current for the scope (dev < 0: leaves it); restores the previous device where it
// changed it (code inside the scope that switches devices itself restores its own change). A
// failing cudaSetDevice throws, unless kNoThrow (code that reports errors otherwise).
class DeviceGuard {
 public:
  enum NoThrow { kNoThrow };
  explicit DeviceGuard(int dev) : DeviceGuard(dev, kNoThrow) {
    if (setResult_ != cudaSuccess)
      ::coccl::throwError(cocclUnhandledCudaError, "cudaSetDevice(%d) failed: %s (%s)", dev,
                          cudaGetErrorName(setResult_), cudaGetErrorString(setResult_));
  }
  DeviceGuard(int dev, NoThrow) : target_(dev) {
    if (cudaGetDevice(&prev_) != cudaSuccess) {
      (void)cudaGetLastError();
      prev_ = -1;
    }
    if (dev >= 0 && dev != prev_) {
      setResult_ = cudaSetDevice(dev);
      if (setResult_ != cudaSuccess) (void)cudaGetLastError();
    }
  }
  // Restores the caller's device only where it was changed (no driver call on the common path:
  // the calling thread already on the communicator's device).
  ~DeviceGuard() {
    if (prev_ >= 0 && target_ >= 0 && target_ != prev_) (void)cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
  int target_ = -1;
  cudaError_t setResult_ = cudaSuccess;
};

}  // namespace coccl
