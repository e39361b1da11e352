// Compressed device collectives (two-shot AllReduce, ReduceScatter, AllGather through every
// codec and block size) on 2, 3 and 4 processes sharing one GPU: bit for bit the host path's
// result (the device codecs write the host codecs' bytes and the device keeps the host's shard
// and block boundaries), identical on every rank, NaN/Inf where they were, odd counts,
// in-place, several rounds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "coll_util.h"
#include "compressed_util.h"
#include "device_cases.h"
#include "gpu_util.h"

using namespace coccl::test;

namespace {

GpuRunOptions smallStaging() {
  GpuRunOptions o;
  o.config.timeoutMs = 30000;
  o.env = {{"COCCL_DEVICE_STAGING_BYTES", "1M"}};
  return o;
}

const char* const kCodecs[] = {"fp8_ash_ds", "int8", "fp8_ash_ds:block=32,format=e5m2",
                               "int8:block=512,rotate=0", "fp8_ash_ds:block=256",
                               "int8:block=64", "fp8_ash_ds:rotate=0"};
const cocclDataType_t kTypes[] = {cocclBfloat16, cocclFloat16, cocclFloat32};

class DeviceCompressed : public ::testing::TestWithParam<int> {};

TEST_P(DeviceCompressed, AllReduceMatchesHostBitwise) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    uint64_t seed = 1000;
    int k = 0;
    for (const char* spec : kCodecs) {
      CodecHandle codec(spec);
      for (cocclDataType_t dt : kTypes)
        for (cocclRedOp_t op : {cocclSum, cocclAvg})
          for (size_t count : {size_t{1}, size_t{7}, size_t{33}, size_t{4099}, size_t{262147}}) {
            if ((count == 1 || count == 33) && spec != kCodecs[0]) continue;
            DCase c;
            c.coll = DColl::AllReduce;
            c.dt = dt;
            c.op = op;
            c.count = count;
            c.codec = codec.c;
            c.inPlace = (k++ % 2) == 1;
            c.seed = ++seed;
            DResult res = runAndCompare(r, c, s);
            cocclCollStats_t st;
            ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
            EXPECT_STRNE(st.codec, "none");
            EXPECT_TRUE(sameOnAllRanks(r, hashBytes(res.device.data(), res.device.size())))
                << "outputs differ across ranks: " << describe(c);
            if (::testing::Test::HasFailure()) return;
          }
    }
    cudaStreamDestroy(s);
  }, smallStaging());
}

TEST_P(DeviceCompressed, ReduceScatterAndAllGatherMatchHost) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    uint64_t seed = 2000;
    int k = 0;
    for (const char* spec : kCodecs) {
      CodecHandle codec(spec);
      for (cocclDataType_t dt : kTypes)
        for (size_t count : {size_t{7}, size_t{4099}, size_t{100003}}) {
          DCase c;
          c.coll = DColl::ReduceScatter;
          c.dt = dt;
          c.op = (k % 3 == 0) ? cocclAvg : cocclSum;
          c.count = count;
          c.codec = codec.c;
          c.inPlace = (k++ % 2) == 1;
          c.seed = ++seed;
          runAndCompare(r, c, s);
          c.coll = DColl::AllGather;
          c.seed = ++seed;
          DResult res = runAndCompare(r, c, s);
          EXPECT_TRUE(sameOnAllRanks(r, hashBytes(res.device.data(), res.device.size())))
              << "AllGather outputs differ across ranks: " << describe(c);
          if (::testing::Test::HasFailure()) return;
        }
    }
    cudaStreamDestroy(s);
  }, smallStaging());
}

// NaN, Inf and huge values of one rank reach every rank where they were (and nowhere else).
TEST_P(DeviceCompressed, NonFiniteValues) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    CodecHandle codec("fp8_ash_ds");
    const size_t count = 4096 + 13;
    for (cocclDataType_t dt : {cocclFloat32, cocclBfloat16}) {
      RankData d = syntheticInput(dt, count, r.rank, 77);
      const double nan = std::numeric_limits<double>::quiet_NaN();
      const double inf = std::numeric_limits<double>::infinity();
      if (r.rank == r.nranks - 1) {
        setElem(dt, d.bytes.data(), 5, nan);
        setElem(dt, d.bytes.data(), 300, inf);
        setElem(dt, d.bytes.data(), 1000, -inf);
        setElem(dt, d.bytes.data(), 2000, 1e30);
        setElem(dt, d.bytes.data(), count - 1, nan);
      }
      DCase c;
      c.coll = DColl::AllReduce;
      c.dt = dt;
      c.count = count;
      c.codec = codec.c;
      c.input = &d.bytes;
      DResult res = runAndCompare(r, c, s);
      std::vector<double> got = toDoubles(dt, res.device.data(), count);
      EXPECT_TRUE(std::isnan(got[5]));
      EXPECT_EQ(got[300], inf);
      EXPECT_EQ(got[1000], -inf);
      EXPECT_NEAR(got[2000], 1e30, 0.07e30);
      EXPECT_TRUE(std::isnan(got[count - 1]));
      size_t nonFinite = 0;
      for (double v : got) nonFinite += !std::isfinite(v);
      EXPECT_EQ(nonFinite, 4u);
      c.coll = DColl::AllGather;
      res = runAndCompare(r, c, s);
      got = toDoubles(dt, res.device.data(), count * r.nranks);
      const size_t base = (r.nranks - 1) * count;
      EXPECT_TRUE(std::isnan(got[base + 5]));
      EXPECT_EQ(got[base + 300], inf);
      EXPECT_EQ(got[base + 1000], -inf);
      c.coll = DColl::ReduceScatter;
      c.count = count / r.nranks;
      std::vector<uint8_t> rs(d.bytes.begin(), d.bytes.begin() + c.count * r.nranks * elemSize(dt));
      c.input = &rs;
      runAndCompare(r, c, s);
    }
    cudaStreamDestroy(s);
  }, smallStaging());
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceCompressed, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::to_string(i.param) + "procs";
                         });

}  // namespace
