// The staged codec pipeline's per-call agreement on device buffers over CUDA IPC (plug-in
// codecs: int4), on 3 processes sharing GPU 0: ranks whose calls differ get cocclInvalidUsage
// on every rank; calls that agree stay right on several streams and across graph replays.
#include <cstring>
#include <string>
#include <vector>

#include "agree_util.h"
#include "compressed_util.h"
#include "device_cases.h"
#include "gpu_util.h"

namespace coccl::test {
namespace {

// Plug-in codecs over CUDA IPC run on the staged pipeline, whose pieces move through the P2P
// kernel: the first exchange of each such call compares the call's descriptor with every
// rank's (P2PArgs::callAgree, the fused kernels' agreeCall). Before it, nothing compared
// calls that differ only in the op (the same payload bytes).
Side int4Side(cocclRedOp_t op, size_t count) {
  Side s;
  s.dt = cocclBfloat16;
  s.codec = "int4";
  s.op = op;
  s.count = count;
  return s;
}
#ifndef COCCL_INT4_PLUGIN
#define COCCL_INT4_PLUGIN ""  // not built: the tests below skip
#endif
const Case kStagedCases[] = {
    {"int4_op", int4Side(cocclSum, 65536), int4Side(cocclAvg, 65536), "op differs"},
    {"int4_count", int4Side(cocclSum, 409600), int4Side(cocclSum, 409598), "count differs"},
};

class DeviceAgreementStaged : public ::testing::TestWithParam<Case> {};

TEST_P(DeviceAgreementStaged, CudaIpcEveryRankFails) {
  COCCL_REQUIRE_GPU();
  if (!*COCCL_INT4_PLUGIN) GTEST_SKIP() << "int4 plug-in not built";
  GpuRunOptions o;
  o.env = {{"COCCL_DEVICE_TRANSPORT", "cuda_ipc"}, {"COCCL_CODEC_PLUGIN", COCCL_INT4_PLUGIN}};
  everyRankFailsBeforeTheCall(GetParam(), o, "device path (CUDA IPC, staged codec pipeline)");
}

INSTANTIATE_TEST_SUITE_P(Fields, DeviceAgreementStaged, ::testing::ValuesIn(kStagedCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Staged calls that agree keep working with the check on: many int4 AllReduces of 3 ranks,
// alternating between two streams without syncs (the exchanges, and the agreement in each
// call's first one, run on the pipeline's internal stream in the order of the calls), sums of
// 1 + 2 + 3 within int4's bound.
TEST(DeviceAgreementStaged, CudaIpcAgreeingCallsStillRight) {
  COCCL_REQUIRE_GPU();
  if (!*COCCL_INT4_PLUGIN) GTEST_SKIP() << "int4 plug-in not built";
  GpuRunOptions o;
  o.env = {{"COCCL_DEVICE_TRANSPORT", "cuda_ipc"}, {"COCCL_CODEC_PLUGIN", COCCL_INT4_PLUGIN}};
  runGpuRanks(
      3,
      [](Rank& r) {
        cudaStream_t st[2];
        for (cudaStream_t& x : st) CUDA_OK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
        cocclCodec_t codec = nullptr;
        ASSERT_EQ(cocclCodecCreate("int4", &codec), cocclSuccess);
        const size_t n = 20000;
        std::vector<float> h(n, static_cast<float>(r.rank + 1));
        DevBuf in(n * 4), out0(n * 4), out1(n * 4);
        in.upload(h.data(), n * 4);
        for (int i = 0; i < 50; ++i)
          ASSERT_EQ(cocclAllReduceCodec(in.data(), (i % 2 ? out1 : out0).data(),
                                        n - static_cast<size_t>(i), cocclFloat32, cocclSum, codec,
                                        r.comm, st[i % 2]),
                    cocclSuccess);
        for (cudaStream_t x : st) CUDA_OK(cudaStreamSynchronize(x));
        cocclResult_t async = cocclSuccess;
        ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
        EXPECT_EQ(async, cocclSuccess) << "rank " << r.rank << ": " << cocclGetLastError(r.comm);
        for (const DevBuf* b : {&out0, &out1}) {
          const std::vector<uint8_t> got = b->download(n * 4);
          for (size_t i = 0; i < n - 49; i += 997) {
            float v;
            std::memcpy(&v, got.data() + 4 * i, 4);
            EXPECT_NEAR(v, 6.0f, 0.5f) << "rank " << r.rank << " element " << i;
          }
        }
        cocclCodecDestroy(codec);
        for (cudaStream_t x : st) cudaStreamDestroy(x);
      },
      o);
}

// A staged call captured into a CUDA graph keeps its agreement across replays: the descriptor
// is a kernel argument of its first exchange, the agreement numbers advance in device memory on
// every replay and on the fused calls (exact fp32 AllReduces) run eagerly between replays. 20
// replays of int4 on 3 ranks, each bitwise the host path's result for its step.
TEST(DeviceAgreementStaged, CudaIpcGraphReplayBesideEagerCalls) {
  COCCL_REQUIRE_GPU();
  if (!*COCCL_INT4_PLUGIN) GTEST_SKIP() << "int4 plug-in not built";
  GpuRunOptions o;
  o.env = {{"COCCL_DEVICE_TRANSPORT", "cuda_ipc"},
           {"COCCL_CODEC_PLUGIN", COCCL_INT4_PLUGIN},
           {"COCCL_DEVICE_EXACT", "coccl"}};
  runGpuRanks(
      3,
      [](Rank& r) {
        CodecHandle codec("int4");
        checkGraphReplay(r, codec.c, 20, 5);
      },
      o);
}

}  // namespace
}  // namespace coccl::test
