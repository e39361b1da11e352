// Fault injection on device buffers: 3 or 4 ranks as processes sharing GPU 0 through CUDA IPC
// run 200 seeded mixed calls (exact and compressed AllReduce, ReduceScatter, AllGather,
// Broadcast, grouped Send/Recv) on one stream each, and one rank is SIGKILLed at a seeded point
// (possibly while its kernel runs). The survivors' kernels stop at COCCL_TIMEOUT_MS; each
// survivor must see an error within COCCL_TIMEOUT_MS (+ slack) of the death, from the enqueue or
// from cocclCommGetAsyncError once its stream drained, a later call must fail, abort or destroy
// must return promptly, and no process or shared-memory segment may be left behind (the run and
// its checks: tests/collectives/fault_run.h; the host-buffer twin: test_fault_injection.cc).
//
// FAULT_SEED=<n> [FAULT_RANKS=<2..8>] replays another seed.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <utility>

#include "fault_run.h"
#include "gpu_util.h"

using namespace coccl::test;

namespace {

// Buffers carved from one device allocation (no cudaMalloc / cudaFree per call); a call has
// completed when its stream drained, with the communicator's asynchronous error as its outcome.
class DeviceMemory : public FaultMemory {
 public:
  static constexpr size_t kArenaBytes = 32u << 20;  // >= 3 buffers of the largest call (8 MiB)
  DeviceMemory() {
    if (cudaMalloc(&arena_, kArenaBytes) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) {
      std::fprintf(stderr, "device memory for the fault test: %s\n",
                   cudaGetErrorString(cudaGetLastError()));
      _exit(20);
    }
  }
  ~DeviceMemory() override {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
    cudaFree(arena_);
  }
  void* alloc(size_t bytes) override {
    const size_t at = used_;
    used_ += (bytes + 255) & ~size_t{255};
    if (used_ > kArenaBytes) {
      std::fprintf(stderr, "fault test: device arena exhausted (%zu bytes)\n", used_);
      _exit(21);
    }
    return static_cast<char*>(arena_) + at;
  }
  void release() override { used_ = 0; }
  // On the calls' stream, waited for: a cudaMemcpy from pageable memory may return before its
  // DMA lands, and a non-blocking stream is not ordered after it.
  void upload(void* dst, const void* host, size_t bytes) override {
    if (cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_) != cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess)
      _exit(22);
  }
  void download(void* host, const void* src, size_t bytes) override {
    if (cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_) != cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess)
      _exit(23);
  }
  cocclStream_t stream() override { return stream_; }
  cocclResult_t complete(cocclComm_t comm) override {
    if (cudaStreamSynchronize(stream_) != cudaSuccess) return cocclUnhandledCudaError;
    cocclResult_t async = cocclSuccess;
    const cocclResult_t q = cocclCommGetAsyncError(comm, &async);
    return q != cocclSuccess ? q : async;
  }

 private:
  void* arena_ = nullptr;
  size_t used_ = 0;
  cudaStream_t stream_ = nullptr;
};

FaultRankSetup deviceSetup() {
  FaultRankSetup s;
  s.beforeInit = [](int rank) { useDeviceOrExit(0, rank); };
  s.memory = [] { return std::unique_ptr<FaultMemory>(new DeviceMemory); };
  // Processes time-share the GPU without MPS: more room for the 200 calls and the teardown.
  s.hangLimitMs = 120000;
  s.noticeSlackMs = 4000.0;
  return s;
}

// (seed, ranks)
class DeviceFaultInjection : public ::testing::TestWithParam<std::pair<uint64_t, int>> {};

TEST_P(DeviceFaultInjection, KillOneRank) {
  COCCL_REQUIRE_GPU();
  runFaultSeed(GetParam().first, GetParam().second, deviceSetup());
}

INSTANTIATE_TEST_SUITE_P(Seeds, DeviceFaultInjection,
                         ::testing::Values(std::make_pair(11, 3), std::make_pair(12, 3),
                                           std::make_pair(13, 4)),
                         [](const ::testing::TestParamInfo<std::pair<uint64_t, int>>& i) {
                           return "seed" + std::to_string(i.param.first) + "_" +
                                  std::to_string(i.param.second) + "ranks";
                         });

TEST(DeviceFaultInjectionReplay, FromEnvironment) {
  COCCL_REQUIRE_GPU();
  runFaultSeedFromEnvironment(deviceSetup());
}

}  // namespace
