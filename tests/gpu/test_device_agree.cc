// Per-call agreement on the CUDA IPC executor (agreeCall in src/collectives/cuda_ipc/
// kernel_common.cuh), on 3 processes sharing GPU 0: ranks whose calls differ in count, op,
// datatype or root enqueue successfully, their kernels stop within seconds without writing
// recvbuff, cocclCommGetAsyncError gives cocclInvalidUsage on every rank, and the next call
// fails naming the field and both values. The NCCL executor does not check yet (README
// "Agreement").
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_util.h"

namespace coccl::test {
namespace {

struct Side {
  size_t count = 65536;
  cocclDataType_t dt = cocclFloat32;
  cocclRedOp_t op = cocclSum;
  int root = 0;
  bool broadcast = false;
  const char* codec = nullptr;  // per-call codec
};

struct Case {
  const char* name;
  Side common, odd;  // rank 2 runs `odd`, the others `common`
  const char* says;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

Side with(Side s, void (*f)(Side&)) {
  f(s);
  return s;
}

const Case kCases[] = {
    {"count_exact",
     {},
     with({}, [](Side& s) { s.count = 65535; }),
     "count differs"},
    {"count_compressed_same_blocks",
     with({},
          [](Side& s) {
            s.count = 409600;
            s.dt = cocclBfloat16;
            s.codec = "fp8_ash_ds";
          }),
     with({},
          [](Side& s) {
            s.count = 409598;
            s.dt = cocclBfloat16;
            s.codec = "fp8_ash_ds";
          }),
     "count differs"},
    {"op_compressed", with({}, [](Side& s) { s.codec = "fp8_ash_ds"; }),
     with({},
          [](Side& s) {
            s.codec = "fp8_ash_ds";
            s.op = cocclAvg;
          }),
     "op differs"},
    {"dtype_same_bytes",
     {},
     with({},
          [](Side& s) {
            s.dt = cocclBfloat16;
            s.count = 131072;
          }),
     "datatype differs"},
    {"broadcast_root", with({}, [](Side& s) { s.broadcast = true; }),
     with({},
          [](Side& s) {
            s.broadcast = true;
            s.root = 1;
          }),
     "root differs"},
};

class DeviceAgreement : public ::testing::TestWithParam<Case> {};

TEST_P(DeviceAgreement, CudaIpcEveryRankFails) {
  COCCL_REQUIRE_GPU();
  const Case k = GetParam();
  GpuRunOptions o;
  o.config.timeoutMs = 20000;
  o.destroyComm = false;
  o.env = {{"COCCL_DEVICE_TRANSPORT", "cuda_ipc"}, {"COCCL_DEVICE_EXACT", "coccl"}};
  runGpuRanks(
      3,
      [&k](Rank& r) {
        const Side& s = r.rank == 2 ? k.odd : k.common;
        cudaStream_t st;
        CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        const size_t bytes = s.count * (s.dt == cocclFloat32 ? 4 : 2);
        DevBuf in(bytes, 0x11), out(bytes, 0xCD);
        cocclCodec_t codec = nullptr;
        if (s.codec) {
          ASSERT_EQ(cocclCodecCreate(s.codec, &codec), cocclSuccess);
        }
        const auto t0 = std::chrono::steady_clock::now();
        const cocclResult_t res =
            s.broadcast ? cocclBroadcast(in.data(), out.data(), s.count, s.dt, s.root, r.comm, st)
                        : cocclAllReduceCodec(in.data(), out.data(), s.count, s.dt, s.op, codec,
                                              r.comm, st);
        EXPECT_EQ(res, cocclSuccess) << cocclGetLastError(r.comm);  // enqueued
        CUDA_OK(cudaStreamSynchronize(st));
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  10.0);
        cocclResult_t async = cocclSuccess;
        ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
        EXPECT_EQ(async, cocclInvalidUsage) << "rank " << r.rank;
        const std::vector<uint8_t> got = out.download();
        EXPECT_EQ(got, std::vector<uint8_t>(bytes, 0xCD))
            << "rank " << r.rank << ": recvbuff written";
        EXPECT_TRUE(out.guardsIntact());
        // The next call names the difference.
        EXPECT_EQ(cocclAllReduce(in.data(), out.data(), 16, cocclFloat32, cocclSum, r.comm, st),
                  cocclInvalidUsage);
        const std::string msg = cocclGetLastError(r.comm);
        EXPECT_NE(msg.find(k.says), std::string::npos) << "rank " << r.rank << ": " << msg;
        if (codec) cocclCodecDestroy(codec);
        EXPECT_EQ(cocclCommAbort(r.comm), cocclSuccess);
        cudaStreamDestroy(st);
      },
      o);
}

INSTANTIATE_TEST_SUITE_P(Fields, DeviceAgreement, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Calls that agree keep working with the agreement on (many small calls, graph-free).
TEST(DeviceAgreement, CudaIpcAgreeingCallsStillRight) {
  COCCL_REQUIRE_GPU();
  GpuRunOptions o;
  o.env = {{"COCCL_DEVICE_TRANSPORT", "cuda_ipc"}, {"COCCL_DEVICE_EXACT", "coccl"}};
  runGpuRanks(
      3,
      [](Rank& r) {
        cudaStream_t st;
        CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        std::vector<int32_t> h(1000, r.rank + 1);
        DevBuf b(h.size() * 4);
        for (int i = 0; i < 300; ++i) {
          b.upload(h.data(), h.size() * 4);
          ASSERT_EQ(cocclAllReduce(b.data(), b.data(), 1000 - i, cocclInt32, cocclSum, r.comm, st),
                    cocclSuccess);
          CUDA_OK(cudaStreamSynchronize(st));
          const std::vector<uint8_t> got = b.download();
          int32_t v;
          std::memcpy(&v, got.data() + 4 * (999 - i), 4);
          ASSERT_EQ(v, 6) << "call " << i;
        }
        cocclResult_t async = cocclSuccess;
        ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
        EXPECT_EQ(async, cocclSuccess);
        cudaStreamDestroy(st);
      },
      o);
}

}  // namespace
}  // namespace coccl::test
