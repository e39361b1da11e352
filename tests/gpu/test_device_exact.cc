// Exact (uncompressed) device collectives on 2, 3 and 4 processes sharing one GPU: every
// collective, data type and op against the host path, bit for bit (random inputs with NaN, Inf,
// huge and tiny values and signed zeros; odd counts; several rounds through small staging;
// in-place and out-of-place), plus device Send/Recv.
#include <gtest/gtest.h>

#include <cstring>

#include "coll_util.h"
#include "compressed_util.h"
#include "device_cases.h"
#include "gpu_util.h"

using namespace coccl::test;

namespace {

const cocclDataType_t kAllTypes[] = {cocclInt8,    cocclUint8,   cocclInt32,    cocclUint32,
                                     cocclInt64,   cocclUint64,  cocclFloat16,  cocclFloat32,
                                     cocclFloat64, cocclBfloat16, cocclFloat8e4m3, cocclFloat8e5m2};
const cocclRedOp_t kAllOps[] = {cocclSum, cocclProd, cocclMax, cocclMin, cocclAvg};

GpuRunOptions smallStaging() {
  GpuRunOptions o;
  o.config.timeoutMs = 30000;
  // 1 MiB of staging: sub-slots of a few KiB, so that modest counts take several rounds.
  o.env = {{"COCCL_DEVICE_STAGING_BYTES", "1M"}};
  return o;
}

class DeviceExact : public ::testing::TestWithParam<int> {};

TEST_P(DeviceExact, AllReduceEveryTypeAndOp) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    int dev = -2;
    ASSERT_EQ(cocclCommCuDevice(r.comm, &dev), cocclSuccess);
    EXPECT_EQ(dev, 0);
    uint64_t seed = 100;
    int k = 0;
    for (cocclDataType_t dt : kAllTypes)
      for (cocclRedOp_t op : kAllOps) {
        DCase c;
        c.coll = DColl::AllReduce;
        c.dt = dt;
        c.op = op;
        c.count = 4099;
        c.inPlace = (k++ % 2) == 1;
        c.seed = ++seed;
        DResult res = runAndCompare(r, c, s);
        cocclCollStats_t st;
        ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
        if (::testing::Test::HasFailure()) return;
      }
    // Odd sizes, 1 element and several rounds.
    for (cocclDataType_t dt : {cocclFloat32, cocclBfloat16, cocclInt32, cocclFloat8e4m3})
      for (cocclRedOp_t op : {cocclSum, cocclMax})
        for (size_t count : {size_t{1}, size_t{7}, size_t{300001}})
          for (bool inPlace : {false, true}) {
            DCase c;
            c.coll = DColl::AllReduce;
            c.dt = dt;
            c.op = op;
            c.count = count;
            c.inPlace = inPlace;
            c.seed = ++seed;
            runAndCompare(r, c, s);
            if (::testing::Test::HasFailure()) return;
          }
    // Output identical on every rank.
    DCase c;
    c.count = 12345;
    c.seed = 7;
    DResult res = runAndCompare(r, c, s);
    EXPECT_TRUE(sameOnAllRanks(r, hashBytes(res.device.data(), res.device.size())));
    cudaStreamDestroy(s);
  }, smallStaging());
}

TEST_P(DeviceExact, ReduceScatterAndReduce) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    uint64_t seed = 200;
    int k = 0;
    for (cocclDataType_t dt : kAllTypes)
      for (cocclRedOp_t op : {cocclSum, kAllOps[k % 5 == 0 ? 1 : k % 5]}) {
        DCase c;
        c.coll = DColl::ReduceScatter;
        c.dt = dt;
        c.op = op;
        c.count = 1031;
        c.inPlace = (k++ % 2) == 1;
        c.seed = ++seed;
        runAndCompare(r, c, s);
        if (::testing::Test::HasFailure()) return;
      }
    for (bool inPlace : {false, true}) {
      DCase c;
      c.coll = DColl::ReduceScatter;
      c.dt = cocclFloat32;
      c.count = 100003;
      c.inPlace = inPlace;
      c.seed = ++seed;
      runAndCompare(r, c, s);
    }
    for (int root = 0; root < r.nranks; ++root)
      for (cocclDataType_t dt : {cocclInt64, cocclFloat16})
        for (cocclRedOp_t op : {cocclSum, cocclMax, cocclAvg})
          for (bool inPlace : {false, true}) {
            DCase c;
            c.coll = DColl::Reduce;
            c.dt = dt;
            c.op = op;
            c.root = root;
            c.count = root == 0 ? 150001 : 5003;
            c.inPlace = inPlace;
            c.seed = ++seed;
            runAndCompare(r, c, s);
            if (::testing::Test::HasFailure()) return;
          }
    cudaStreamDestroy(s);
  }, smallStaging());
}

TEST_P(DeviceExact, AllGatherAndBroadcast) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    uint64_t seed = 300;
    for (cocclDataType_t dt : {cocclInt8, cocclBfloat16, cocclFloat64})
      for (size_t count : {size_t{1}, size_t{7}, size_t{4099}, size_t{100003}})
        for (bool inPlace : {false, true}) {
          DCase c;
          c.coll = DColl::AllGather;
          c.dt = dt;
          c.count = count;
          c.inPlace = inPlace;
          c.seed = ++seed;
          DResult res = runAndCompare(r, c, s);
          EXPECT_TRUE(sameOnAllRanks(r, hashBytes(res.device.data(), res.device.size())));
          if (::testing::Test::HasFailure()) return;
        }
    for (int root = 0; root < r.nranks; ++root)
      for (cocclDataType_t dt : {cocclUint8, cocclFloat32})
        for (size_t count : {size_t{3}, size_t{100003}})
          for (bool inPlace : {false, true}) {
            DCase c;
            c.coll = DColl::Broadcast;
            c.dt = dt;
            c.root = root;
            c.count = count;
            c.inPlace = inPlace;
            c.seed = ++seed;
            runAndCompare(r, c, s);
            if (::testing::Test::HasFailure()) return;
          }
    cudaStreamDestroy(s);
  }, smallStaging());
}

// Device Send/Recv: a ring exchange in a group, all-to-all with different sizes per pair and
// two streams, a send to self, and in-place sendrecv (one buffer), each against known data.
TEST_P(DeviceExact, SendRecv) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) {
    const int n = r.nranks, me = r.rank;
    cudaStream_t s, s2;
    CUDA_OK(cudaStreamCreate(&s));
    CUDA_OK(cudaStreamCreate(&s2));
    auto payload = [](int from, int to, size_t bytes) {
      return randomInput(cocclUint8, bytes, 9000 + static_cast<uint64_t>(to), from);
    };
    // Ring, out of place and in place.
    for (bool inPlace : {false, true})
      for (size_t bytes : {size_t{1}, size_t{1000003}}) {
        const int to = (me + 1) % n, from = (me - 1 + n) % n;
        std::vector<uint8_t> mine = payload(me, to, bytes);
        DevBuf sb(bytes), rb(bytes);
        sb.upload(mine.data(), bytes);
        void* recv = inPlace ? sb.data() : rb.data();
        ASSERT_EQ(cocclGroupStart(), cocclSuccess);
        ASSERT_EQ(cocclSend(sb.data(), bytes, cocclUint8, to, r.comm, s), cocclSuccess);
        ASSERT_EQ(cocclRecv(recv, bytes, cocclUint8, from, r.comm, s), cocclSuccess);
        ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
        CUDA_OK(cudaStreamSynchronize(s));
        std::vector<uint8_t> got = inPlace ? sb.download() : rb.download();
        EXPECT_TRUE(sameBytes(got, payload(from, me, bytes), 1)) << "ring bytes " << bytes;
        EXPECT_TRUE(sb.guardsIntact() && rb.guardsIntact());
      }
    // All-to-all (self included), sizes differ per pair, receives on a second stream.
    {
      auto size = [](int from, int to) { return size_t{1000} * (1 + from) + 77 * to + 3; };
      std::vector<std::unique_ptr<DevBuf>> sbuf(n), rbuf(n);
      for (int j = 0; j < n; ++j) {
        sbuf[j] = std::make_unique<DevBuf>(size(me, j));
        std::vector<uint8_t> d = payload(me, j, size(me, j));
        sbuf[j]->upload(d.data(), d.size());
        rbuf[j] = std::make_unique<DevBuf>(size(j, me));
      }
      ASSERT_EQ(cocclGroupStart(), cocclSuccess);
      for (int j = 0; j < n; ++j) {
        ASSERT_EQ(cocclSend(sbuf[j]->data(), size(me, j), cocclUint8, j, r.comm, s), cocclSuccess);
        ASSERT_EQ(cocclRecv(rbuf[j]->data(), size(j, me), cocclUint8, j, r.comm, s2), cocclSuccess);
      }
      ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
      CUDA_OK(cudaStreamSynchronize(s2));
      CUDA_OK(cudaStreamSynchronize(s));
      for (int j = 0; j < n; ++j)
        EXPECT_TRUE(sameBytes(rbuf[j]->download(), payload(j, me, size(j, me)), 1))
            << "all-to-all from " << j;
    }
    // Plain (ungrouped) send / receive between ranks 0 and 1, float data, several rounds.
    if (n >= 2 && me < 2) {
      const size_t count = 700001;
      std::vector<uint8_t> d = payload(0, 1, count * 4);
      DevBuf b(count * 4);
      if (me == 0) {
        b.upload(d.data(), d.size());
        ASSERT_EQ(cocclSend(b.data(), count, cocclFloat32, 1, r.comm, s), cocclSuccess);
      } else {
        ASSERT_EQ(cocclRecv(b.data(), count, cocclFloat32, 0, r.comm, s), cocclSuccess);
      }
      CUDA_OK(cudaStreamSynchronize(s));
      if (me == 1) {
        EXPECT_TRUE(sameBytes(b.download(), d, 4));
      }
    }
    // A collective after the point-to-point traffic still lines up.
    DCase c;
    c.count = 77777;
    c.seed = 5;
    runAndCompare(r, c, s);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
  }, smallStaging());
}

// Host and device buffers in one call are rejected; a host-buffer call still takes the host path.
TEST_P(DeviceExact, MixedMemoryRejected) {
  COCCL_REQUIRE_GPU();
  if (GetParam() != 2) GTEST_SKIP() << "run at 2 ranks";
  runGpuRanks(GetParam(), [](Rank& r) {
    DevBuf d(64 * 4);
    std::vector<float> h(64, 1.0f);
    EXPECT_EQ(cocclAllReduce(h.data(), d.data(), 64, cocclFloat32, cocclSum, r.comm, nullptr),
              cocclInvalidArgument);
    EXPECT_EQ(cocclAllReduce(d.data(), h.data(), 64, cocclFloat32, cocclSum, r.comm, nullptr),
              cocclInvalidArgument);
    std::vector<float> out(64);
    EXPECT_EQ(cocclAllReduce(h.data(), out.data(), 64, cocclFloat32, cocclSum, r.comm, nullptr),
              cocclSuccess);
    EXPECT_EQ(out[0], 2.0f);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceExact, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::to_string(i.param) + "procs";
                         });

}  // namespace
