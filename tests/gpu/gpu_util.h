// Helpers of the GPU tests (label gpu): GPU detection that never initialises CUDA in the test
// process, a fork-per-rank runner whose children make device 0 current before creating their
// communicator (several processes share one GPU through CUDA IPC), device buffers with guard
// zones, and the placement of send/receive buffers as nccl-tests lays them out.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "coccl.h"
#include "harness/harness.h"

namespace coccl::test {

// True when a CUDA device is usable. Decided in a short-lived child process, so the test
// process itself stays free of CUDA (it forks the ranks afterwards). Cached.
bool gpuAvailable();
// CUDA devices visible (0 when none), decided the same way. Cached.
int gpuCount();

#define COCCL_REQUIRE_GPU()                                                       \
  do {                                                                            \
    if (!::coccl::test::gpuAvailable()) GTEST_SKIP() << "no CUDA device: skipped"; \
  } while (0)

#define COCCL_REQUIRE_GPUS(n)                                                              \
  do {                                                                                     \
    if (::coccl::test::gpuCount() < (n))                                                   \
      GTEST_SKIP() << "needs " << (n) << " GPUs, " << ::coccl::test::gpuCount() << " seen"; \
  } while (0)

#define CUDA_OK(call)                                                             \
  do {                                                                            \
    cudaError_t e_ = (call);                                                      \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_);       \
  } while (0)

struct GpuRunOptions {
  // A device wait that never ends becomes an error after 60 s (not the 5-minute default).
  cocclConfig_t config = configWithTimeout(60000);
  int harnessTimeoutS = 240;
  bool destroyComm = true;
  // Environment set in every child before anything else (e.g. COCCL_DEVICE_STAGING_BYTES).
  std::vector<std::pair<std::string, std::string>> env;
  // Gives every rank its own NCCL_HOSTID, so that the real NCCL (the NCCL transport) accepts
  // several ranks on one GPU.
  bool ncclHostIdPerRank = false;
  // Rank r uses device r % gpuCount() instead of device 0 (ranks on their own GPUs).
  bool gpuPerRank = false;
};

// `o` moved onto the NCCL transport (COCCL_DEVICE_TRANSPORT=nccl over loopback sockets, NVLS
// off, each rank its own NCCL_HOSTID, a longer harness timeout for NCCL's init).
GpuRunOptions overNcclTransport(GpuRunOptions o);

// Makes device `dev` current and creates its context, in a forked rank's process; on failure
// prints why (naming `rank`) and exits the process with status 2.
void useDeviceOrExit(int dev, int rank);

// Runs body(rank) on n forked processes; each child calls cudaSetDevice(0) (or its own
// device, gpuPerRank), then
// cocclCommInitRankConfig, the body, cocclCommDestroy. Failures are gtest failures (a child
// exits 1 on failure; the parent reports which rank failed or hung).
void runGpuRanks(int n, const std::function<void(Rank&)>& body,
                 const GpuRunOptions& opts = GpuRunOptions());

// Device buffer of `bytes` bytes with kGuard guard bytes on both sides (pattern kGuardByte).
class DevBuf {
 public:
  static constexpr size_t kGuard = 256;
  static constexpr uint8_t kGuardByte = 0x5A;
  explicit DevBuf(size_t bytes, uint8_t fill = 0xCD);
  ~DevBuf();
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  char* data() const { return base_ + kGuard; }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes, size_t offset = 0);
  std::vector<uint8_t> download(size_t bytes, size_t offset = 0) const;
  std::vector<uint8_t> download() const { return download(bytes_); }
  void fill(uint8_t v);
  bool guardsIntact() const;

 private:
  char* base_ = nullptr;
  size_t bytes_;
};

// Bitwise comparison; on mismatch reports the first few differing elements of size `es`.
::testing::AssertionResult sameBytes(const std::vector<uint8_t>& got,
                                     const std::vector<uint8_t>& want, size_t es);
// As sameBytes, but fp32 / fp64 NaNs compare equal whatever their payloads (a sum with NaN
// inputs returns a canonical NaN on the GPU, a payload-carrying one on the CPU; fp16, bf16 and
// fp8 results go through conversions that canonicalise NaN on both).
::testing::AssertionResult sameValues(const std::vector<uint8_t>& got,
                                      const std::vector<uint8_t>& want, cocclDataType_t dt);
// As sameValues for fp32/fp16/bf16 data, but +0 and -0 compare equal too.
::testing::AssertionResult sameFloatsUpToZeroSign(const std::vector<uint8_t>& got,
                                                  const std::vector<uint8_t>& want,
                                                  cocclDataType_t dt);

// Random input of `count` elements of dt: mostly normal values (small integers for integer
// types), every 16th element a random bit pattern (NaN, Inf, huge, tiny, signed zeros included).
std::vector<uint8_t> randomInput(cocclDataType_t dt, size_t count, uint64_t seed, int rank);

// A device kernel (fill_kernels.cu): buf[i] = pattern value (see there) for i < n, on stream.
cudaError_t fillPattern(void* buf, size_t n, cocclDataType_t dt, int a, int b, cudaStream_t s);
// The same values on the host.
std::vector<uint8_t> hostPattern(size_t n, cocclDataType_t dt, int a, int b);

}  // namespace coccl::test
