// Device collectives with every rank on its own GPU (skipped with fewer than 2 GPUs): the CUDA
// IPC path then runs 128 channels (COCCL_DEVICE_BLOCKS auto) and a call uses 16 to 128 of them
// by its size; the uncompressed operations go to the real NCCL (COCCL_DEVICE_EXACT auto).
// Every collective, compressed and exact (coccl's kernels and NCCL's), bit for bit the host
// path's result and identical on every rank, at sizes from one block to several rounds of all
// 128 channels.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "coll_util.h"
#include "compressed_util.h"
#include "device_cases.h"
#include "gpu_util.h"

using namespace coccl::test;

namespace {

// exact: COCCL_DEVICE_EXACT.
GpuRunOptions ownGpus(const char* exact) {
  GpuRunOptions o;
  o.gpuPerRank = true;
  o.config.timeoutMs = 60000;
  o.harnessTimeoutS = 400;
  // 8 MiB of staging: 16 KiB sub-slots with 128 channels, so the large counts below take
  // several rounds of every channel.
  o.env = {{"COCCL_DEVICE_STAGING_BYTES", "8M"}, {"COCCL_DEVICE_EXACT", exact}};
  return o;
}



int worldSize() { return std::min(gpuCount(), 4); }

const size_t kCounts[] = {7, 4099, 1000003, 24000001};

TEST(DeviceMultiGpu, CompressedMatchesHostBitwise) {
  COCCL_REQUIRE_GPUS(2);
  runGpuRanks(worldSize(), [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    uint64_t seed = 7000;
    int k = 0;
    for (const char* spec : {"fp8_ash_ds", "int8"}) {
      cocclCodec_t codec = nullptr;
      ASSERT_EQ(cocclCodecCreate(spec, &codec), cocclSuccess);
      for (cocclDataType_t dt : {cocclBfloat16, cocclFloat32})
        for (size_t count : kCounts)
          for (DColl coll : {DColl::AllReduce, DColl::ReduceScatter, DColl::AllGather}) {
            DCase c;
            c.coll = coll;
            c.dt = dt;
            c.op = (k % 3 == 2) ? cocclAvg : cocclSum;
            c.count = coll == DColl::AllReduce ? count : count / 2 + 1;
            c.codec = codec;
            c.inPlace = (k++ % 2) == 1;
            c.seed = ++seed;
            DResult res = runAndCompare(r, c, s);
            EXPECT_EQ(res.deviceAlgorithm, coll == DColl::AllGather ? "direct" : "two-shot")
                << describe(c);
            if (coll != DColl::ReduceScatter) {
              EXPECT_TRUE(sameOnAllRanks(r, hashBytes(res.device.data(), res.device.size())))
                  << "outputs differ across ranks: " << describe(c);
            }
            if (::testing::Test::HasFailure()) return;
          }
      cocclCodecDestroy(codec);
    }
    cudaStreamDestroy(s);
  }, ownGpus("auto"));
}

// Every exact collective at every count of kCounts, cycling placement and root; `pick` sets
// the type and op of case k, `wantNccl` whether the real NCCL must have run it.
void exactCases(const Rank& r, uint64_t seed, const std::function<void(DCase&, int)>& pick,
                bool wantNccl) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  int k = 0;
  for (size_t count : kCounts)
    for (DColl coll : {DColl::AllReduce, DColl::ReduceScatter, DColl::AllGather,
                       DColl::Broadcast, DColl::Reduce}) {
      DCase c;
      c.coll = coll;
      pick(c, k);
      c.count = coll == DColl::ReduceScatter || coll == DColl::AllGather ? count / 2 + 1 : count;
      c.root = k % r.nranks;
      c.inPlace = (k++ % 3) == 1;
      c.seed = ++seed;
      const DResult res = runAndCompare(r, c, s);
      EXPECT_EQ(res.deviceAlgorithm == "nccl", wantNccl) << res.deviceAlgorithm << ": " << describe(c);
      if (::testing::Test::HasFailure()) break;
    }
  cudaStreamDestroy(s);
}

// coccl's own exact kernels on 128 channels (COCCL_DEVICE_EXACT=coccl): any type and op.
TEST(DeviceMultiGpu, ExactOnCocclKernelsMatchesHostBitwise) {
  COCCL_REQUIRE_GPUS(2);
  runGpuRanks(worldSize(), [](Rank& r) {
    exactCases(r, 8000, [](DCase& c, int k) {
      c.dt = (k % 2) ? cocclBfloat16 : cocclFloat32;
      c.op = (k % 3 == 2) ? cocclMax : cocclSum;
    }, false);
  }, ownGpus("coccl"));
}

// The real NCCL (COCCL_DEVICE_EXACT auto, ranks on their own GPUs): int32 sums and maxima are
// bitwise whatever NCCL's reduction order; fp32 sums too at 2 ranks (a + b = b + a). (Not fp32
// MAX/MIN: NCCL's returns the other operand of a NaN, the host path keeps the NaN.)
TEST(DeviceMultiGpu, ExactThroughNcclMatchesHostBitwise) {
  COCCL_REQUIRE_GPUS(2);
  runGpuRanks(worldSize(), [](Rank& r) {
    const bool two = r.nranks == 2;
    exactCases(r, 9000, [two](DCase& c, int k) {
      c.dt = (k % 2 == 0 && two) ? cocclFloat32 : cocclInt32;
      c.op = c.dt == cocclInt32 && k % 4 == 3 ? cocclMax : cocclSum;
    }, true);
  }, ownGpus("auto"));
}

}  // namespace
