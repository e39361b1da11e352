// The device path over the NCCL transport (COCCL_DEVICE_TRANSPORT=nccl; src/collectives/nccl/
// nccl_executor.cc), 2 and 3 processes on one GPU, each with its own NCCL_HOSTID (the real NCCL
// then talks over sockets on loopback): compressed AllReduce (two-shot and one-shot) /
// ReduceScatter / AllGather bit for bit the host path's result (same shards, codec bytes and
// reduction order), with small pieces so that the two-stream pipeline runs many rounds; NCCL's own
// exact collectives and Send/Recv; a captured graph replayed; back-to-back calls without
// synchronisation.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <tuple>

#include "coll_util.h"
#include "compressed_util.h"
#include "device_cases.h"
#include "gpu_util.h"

using namespace coccl::test;

namespace {

GpuRunOptions overNccl(const char* algo = nullptr) {
  GpuRunOptions o;
  o.config.timeoutMs = 60000;
  o.harnessTimeoutS = 400;
  o.env = {{"COCCL_DEVICE_TRANSPORT", "nccl"}, {"COCCL_CHUNK_BYTES", "16384"},  // 64 KiB slots
           {"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_NVLS_ENABLE", "0"}, {"NCCL_DEBUG", "WARN"}};
  o.ncclHostIdPerRank = true;
  // The host path is the reference: both take the same AllReduce algorithm (`auto` differs:
  // one-shot over NCCL at 2 ranks, two-shot on host buffers).
  if (algo) o.env.push_back({"COCCL_ALGO", algo});
  return o;
}

// One small AllReduce on device buffers; the last call's statistics name the algorithm (the
// device path over NCCL, not CUDA IPC and not the host path).
void expectDeviceAlgorithm(const Rank& r, cocclCodec_t codec, const char* want) {
  const size_t n = 1 << 16;  // above COCCL_COMPRESS_MIN_BYTES
  DevBuf b(n * 4);
  ASSERT_EQ(codec ? cocclAllReduceCodec(b.data(), b.data(), n, cocclFloat32, cocclSum, codec,
                                        r.comm, nullptr)
                  : cocclAllReduce(b.data(), b.data(), n, cocclInt32, cocclSum, r.comm, nullptr),
            cocclSuccess)
      << cocclGetLastError(r.comm);
  CUDA_OK(cudaDeviceSynchronize());
  cocclCollStats_t st;
  ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
  EXPECT_STREQ(st.algorithm, want);
}

class DeviceNccl : public ::testing::TestWithParam<int> {};

// (ranks, COCCL_ALGO): two-shot and one-shot AllReduce over NCCL.
class DeviceNcclCompressed : public ::testing::TestWithParam<std::tuple<int, const char*>> {};

TEST_P(DeviceNcclCompressed, CompressedMatchesHostBitwise) {
  COCCL_REQUIRE_GPU();
  const std::string algo = std::get<1>(GetParam());
  runGpuRanks(std::get<0>(GetParam()), [algo](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    {
      CodecHandle fp8("fp8_ash_ds");
      expectDeviceAlgorithm(r, fp8.c, (algo + "/nccl").c_str());
    }
    uint64_t seed = 7000;
    int k = 0;
    for (const char* spec : {"fp8_ash_ds", "int8:block=64", "fp8_ash_ds:block=32,format=e5m2"}) {
      CodecHandle codec(spec);
      for (cocclDataType_t dt : {cocclBfloat16, cocclFloat16, cocclFloat32})
        for (size_t count : {size_t{7}, size_t{4099}, size_t{100003}}) {
          DCase c;
          c.dt = dt;
          c.count = count;
          c.codec = codec.c;
          c.coll = DColl::AllReduce;
          c.op = (k % 2) ? cocclAvg : cocclSum;
          c.inPlace = (k++ % 3) == 1;
          c.seed = ++seed;
          DResult res = runAndCompare(r, c, s);
          EXPECT_TRUE(sameOnAllRanks(r, hashBytes(res.device.data(), res.device.size())))
              << describe(c);
          c.coll = DColl::ReduceScatter;
          c.seed = ++seed;
          runAndCompare(r, c, s);
          c.coll = DColl::AllGather;
          c.seed = ++seed;
          res = runAndCompare(r, c, s);
          EXPECT_TRUE(sameOnAllRanks(r, hashBytes(res.device.data(), res.device.size())))
              << describe(c);
          if (::testing::Test::HasFailure()) return;
        }
    }
    cudaStreamDestroy(s);
  }, overNccl(algo.c_str()));
}

INSTANTIATE_TEST_SUITE_P(RanksAlgo, DeviceNcclCompressed,
                         ::testing::Values(std::make_tuple(2, "one-shot"),
                                           std::make_tuple(2, "two-shot"),
                                           std::make_tuple(3, "two-shot"),
                                           std::make_tuple(3, "one-shot")),
                         [](const ::testing::TestParamInfo<std::tuple<int, const char*>>& i) {
                           std::string a = std::get<1>(i.param);
                           a.erase(a.find('-'), 1);
                           return std::to_string(std::get<0>(i.param)) + "procs_" + a;
                         });

// Uncompressed calls are NCCL's own: integer sums and maxima (and fp32 sums of two ranks) give
// the host's bits in any order. (Not fp32 max/min: NCCL's ignore NaN where the host's propagate
// it, and the random inputs hold NaNs.)
TEST_P(DeviceNccl, ExactCollectivesAndSendRecv) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    const DColl colls[] = {DColl::AllReduce, DColl::ReduceScatter, DColl::AllGather,
                           DColl::Broadcast, DColl::Reduce};
    expectDeviceAlgorithm(r, nullptr, "nccl");
    {  // COCCL_ALGO=auto: one-shot at 2 ranks (the same bytes, NCCL's all-gather only)
      CodecHandle fp8("fp8_ash_ds");
      expectDeviceAlgorithm(r, fp8.c, r.nranks == 2 ? "one-shot/nccl" : "two-shot/nccl");
    }
    uint64_t seed = 8000;
    for (DColl coll : colls)
      for (size_t count : {size_t{1}, size_t{33}, size_t{300007}}) {
        DCase c;
        c.coll = coll;
        c.dt = cocclInt32;
        c.count = count;
        c.root = r.nranks - 1;
        c.inPlace = count == 33;
        c.seed = ++seed;
        runAndCompare(r, c, s);
        c.op = cocclMax;
        c.seed = ++seed;
        runAndCompare(r, c, s);
        if (r.nranks == 2) {  // a + b == b + a, NaN and Inf included
          c.dt = cocclFloat32;
          c.op = cocclSum;
          c.seed = ++seed;
          runAndCompare(r, c, s);
        }
        if (::testing::Test::HasFailure()) return;
      }
    // A ring of sends and receives in one group, then an all-to-all on two streams.
    const int n = r.nranks, me = r.rank, to = (me + 1) % n, from = (me + n - 1) % n;
    const size_t bytes = 1000003;
    auto payload = [](int a, int b, size_t len) {
      return randomInput(cocclUint8, len, 9100 + static_cast<uint64_t>(b), a);
    };
    DevBuf sb(bytes), rb(bytes);
    std::vector<uint8_t> mine = payload(me, to, bytes);
    sb.upload(mine.data(), bytes);
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    ASSERT_EQ(cocclSend(sb.data(), bytes, cocclUint8, to, r.comm, s), cocclSuccess);
    ASSERT_EQ(cocclRecv(rb.data(), bytes, cocclUint8, from, r.comm, s), cocclSuccess);
    ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_TRUE(sameBytes(rb.download(), payload(from, me, bytes), 1));
    EXPECT_TRUE(sb.guardsIntact() && rb.guardsIntact());
    cudaStream_t s2;
    CUDA_OK(cudaStreamCreate(&s2));
    auto size = [](int a, int b) { return size_t{1000} * (1 + a) + 77 * b + 3; };
    std::vector<std::unique_ptr<DevBuf>> sbuf(n), rbuf(n);
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    for (int j = 0; j < n; ++j) {
      if (j == me) continue;
      sbuf[j] = std::make_unique<DevBuf>(size(me, j));
      std::vector<uint8_t> d = payload(me, j, size(me, j));
      sbuf[j]->upload(d.data(), d.size());
      rbuf[j] = std::make_unique<DevBuf>(size(j, me));
      ASSERT_EQ(cocclSend(sbuf[j]->data(), size(me, j), cocclUint8, j, r.comm, s), cocclSuccess);
      ASSERT_EQ(cocclRecv(rbuf[j]->data(), size(j, me), cocclUint8, j, r.comm, s2), cocclSuccess);
    }
    ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
    CUDA_OK(cudaStreamSynchronize(s2));
    CUDA_OK(cudaStreamSynchronize(s));
    for (int j = 0; j < n; ++j) {
      if (j != me) {
        EXPECT_TRUE(sameBytes(rbuf[j]->download(), payload(j, me, size(j, me)), 1)) << "from " << j;
      }
    }
    cudaStreamDestroy(s2);
    cudaStreamDestroy(s);
  }, overNccl());
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceNccl, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::to_string(i.param) + "procs";
                         });

// A compressed AllReduce (several pieces, so both streams and all event hand-offs are in the
// graph) captured once and replayed with new inputs; then 300 calls of varying size, codec and
// placement enqueued back to back, sampled against the host path. One-shot (auto's choice at 2
// ranks) and two-shot.
class DeviceNcclRuntime : public ::testing::TestWithParam<const char*> {};

TEST_P(DeviceNcclRuntime, GraphReplayAndBackToBack) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(2, [](Rank& r) {
    CodecHandle fp8("fp8_ash_ds"), int8("int8:block=64");
    checkGraphReplay(r, fp8.c, 30, 0);
    if (::testing::Test::HasFatalFailure()) return;
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t sizes[] = {1, 1000, 32769, 262147};
    const cocclCodec_t codecs[3] = {nullptr, fp8.c, int8.c};
    DevBuf a(262147 * 4), b(262147 * 4);
    struct Sample {
      int it;
      size_t count;
      cocclDataType_t t;
      int codec;
      std::vector<uint8_t> got;
    };
    std::vector<Sample> samples;
    std::mt19937 order(777);  // same sequence on both ranks
    for (int it = 0; it < 300; ++it) {
      const unsigned x = order();
      const cocclDataType_t t = x % 2 ? cocclBfloat16 : cocclFloat32;
      const size_t n = sizes[(x / 2) % 4];
      const int ci = static_cast<int>((x / 8) % 3);
      const bool inPlace = (x / 24) % 2 == 1;
      CUDA_OK(fillPattern(a.data(), n, t, it, r.rank, s));
      void* dst = inPlace ? a.data() : b.data();
      const cocclResult_t res =
          codecs[ci] ? cocclAllReduceCodec(a.data(), dst, n, t, cocclSum, codecs[ci], r.comm, s)
                     : cocclAllReduce(a.data(), dst, n, t, cocclSum, r.comm, s);
      ASSERT_EQ(res, cocclSuccess) << "iteration " << it << ": " << cocclGetLastError(r.comm);
      if (it % 25 == 0) {
        const size_t es = t == cocclFloat32 ? 4 : 2;
        std::vector<uint8_t> got(n * es);
        CUDA_OK(cudaMemcpyAsync(got.data(), dst, n * es, cudaMemcpyDeviceToHost, s));
        CUDA_OK(cudaStreamSynchronize(s));
        samples.push_back({it, n, t, ci, std::move(got)});
      }
    }
    CUDA_OK(cudaStreamSynchronize(s));
    cocclResult_t async;
    ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
    EXPECT_EQ(async, cocclSuccess);
    for (const Sample& sm : samples)
      EXPECT_TRUE(sameBytes(sm.got, hostReference(r, sm.count, sm.t, sm.it, 0, codecs[sm.codec]),
                            sm.t == cocclFloat32 ? 4 : 2))
          << "iteration " << sm.it << " count " << sm.count << " codec " << sm.codec;
    cudaStreamDestroy(s);
  }, overNccl(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Algo, DeviceNcclRuntime, ::testing::Values("one-shot", "two-shot"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string a = i.param;
                           a.erase(a.find('-'), 1);
                           return a;
                         });

}  // namespace
