// Device memory for coccl_perf --mem device (CUDA builds of the tool; COCCL_PERF_CUDA): buffers
// from cudaMalloc (or ncclMemAlloc: --alloc), filled and checked through host copies (cudaMemcpy),
// calls on a stream of the rank's own, timed with CUDA events after a stream synchronisation. In
// host-only builds deviceSupport() is false and the rest is never called (it throws PerfError).
#pragma once

#include <cstddef>
#include <string>

#include "coccl.h"

namespace cocclperf {

bool deviceSupport();

// Makes the rank's device current on the calling thread (before cocclCommInitRank): the
// launcher's local rank (OMPI_COMM_WORLD_LOCAL_RANK, LOCAL_RANK, MPI_LOCALRANKID, else the
// process index) times threads per process plus the thread, modulo the visible devices.
// Returns the device.
int selectDevice(int proc, int thread, int nThreads);

// One rank's device state: two buffers, a stream, two timing events. `alloc` is "cudaMalloc" or
// "ncclMemAlloc" (cuMem memory, as nccl-tests >= 2.19 allocates: libnccl.so.2 is opened at run
// time; PerfError when it cannot be).
class DeviceRank {
 public:
  DeviceRank(size_t bytesPerBuffer, const std::string& alloc);
  ~DeviceRank();
  DeviceRank(const DeviceRank&) = delete;
  DeviceRank& operator=(const DeviceRank&) = delete;

  void* send() const { return send_; }
  void* recv() const { return recv_; }
  cudaStream_t stream() const { return stream_; }
  void upload(void* dev, const void* host, size_t bytes);    // synchronous
  void download(void* host, const void* dev, size_t bytes);  // after the stream's work
  void sync();                                               // the stream
  void startTimer();
  double stopTimerSeconds();  // synchronises

 private:
  void* send_ = nullptr;
  void* recv_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* ev0_ = nullptr;
  void* ev1_ = nullptr;
  using FreeFn = int (*)(void*);  // ncclMemFree (ncclResult_t), or null: cudaFree
  FreeFn ncclFree_ = nullptr;
};

}  // namespace cocclperf
