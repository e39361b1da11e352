// Per-call agreement on the device executors, on 3 processes sharing GPU 0: ranks whose calls
// differ in count, op, datatype or root enqueue successfully, cocclCommGetAsyncError gives
// cocclInvalidUsage on every rank within seconds, and the next call fails naming the field and
// both values; exact device Send/Recv pairs whose sizes differ likewise (the P2P kernel's pair
// agreement).
//   CUDA IPC (agreeCall in src/collectives/cuda_ipc/kernel_common.cuh): the kernels stop
//   without writing recvbuff.
//   NCCL transport (src/collectives/staged/call_check.h): the check runs before the call
//   (COCCL_NCCL_CALL_CHECK=2) or in its first exchange (1, compressed calls); NCCL's kernels of
//   the call itself may then hang or write recvbuff, so the test waits for the error, then
//   aborts (which releases them).
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "agree_util.h"
#include "compressed_util.h"
#include "device_cases.h"
#include "gpu_util.h"

namespace coccl::test {
namespace {

const Case kCases[] = {
    {"count_exact", {}, with({}, [](Side& s) { s.count = 65535; }), "count differs"},
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
    {"op_exact", {}, with({}, [](Side& s) { s.op = cocclMax; }), "op differs"},
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

// The compressed ReduceScatter and AllGather, whose first exchanges over the NCCL transport
// carry the descriptors too: a group of sends and receives, and NCCL's all-gather (payloads of
// 64 and 400 KiB a rank).
Side collOf(SideColl coll, size_t count, cocclDataType_t dt, cocclRedOp_t op) {
  Side s;
  s.coll = coll;
  s.count = count;
  s.dt = dt;
  s.op = op;
  s.codec = "fp8_ash_ds";
  return s;
}
const Case kCollCases[] = {
    {"reduce_scatter_op_compressed", collOf(SideColl::ReduceScatter, 65536, cocclFloat32, cocclSum),
     collOf(SideColl::ReduceScatter, 65536, cocclFloat32, cocclAvg), "op differs"},
    {"all_gather_count_compressed_same_blocks",
     collOf(SideColl::AllGather, 65536, cocclFloat32, cocclSum),
     collOf(SideColl::AllGather, 65534, cocclFloat32, cocclSum), "count differs"},
    {"all_gather_count_compressed_large",
     collOf(SideColl::AllGather, 409600, cocclBfloat16, cocclSum),
     collOf(SideColl::AllGather, 409598, cocclBfloat16, cocclSum), "count differs"},
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
        SideCall c(k, r.rank);
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_EQ(c.enqueue(r.comm), cocclSuccess) << cocclGetLastError(r.comm);  // enqueued
        CUDA_OK(cudaStreamSynchronize(c.st));
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  10.0);
        cocclResult_t async = cocclSuccess;
        ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
        EXPECT_EQ(async, cocclInvalidUsage) << "rank " << r.rank;
        const std::vector<uint8_t> got = c.out.download();
        EXPECT_EQ(got, std::vector<uint8_t>(c.bytes, 0xCD))
            << "rank " << r.rank << ": recvbuff written";
        EXPECT_TRUE(c.out.guardsIntact());
        // The next call names the difference.
        EXPECT_EQ(
            cocclAllReduce(c.in.data(), c.out.data(), 16, cocclFloat32, cocclSum, r.comm, c.st),
            cocclInvalidUsage);
        const std::string msg = cocclGetLastError(r.comm);
        EXPECT_NE(msg.find(k.says), std::string::npos) << "rank " << r.rank << ": " << msg;
        EXPECT_EQ(cocclCommAbort(r.comm), cocclSuccess);
      },
      o);
}

// Over the NCCL transport the check runs before the call: every disagreement is reported,
// also those on which NCCL then hangs (COCCL_NCCL_CALL_CHECK=2: the exact calls as well).
TEST_P(DeviceAgreement, NcclTransportEveryRankFails) {
  COCCL_REQUIRE_GPU();
  GpuRunOptions o = overNcclTransport(GpuRunOptions());
  o.env.push_back({"COCCL_NCCL_CALL_CHECK", "2"});
  everyRankFailsBeforeTheCall(GetParam(), o, "device path (NCCL)");
}

// Without COCCL_NCCL_CALL_CHECK (its default, 1) the compressed calls over the NCCL transport
// are checked, the descriptors carried by the call's first exchange: the disagreements that
// coccl's own pipeline would otherwise turn into wrong results silently (payloads of the same
// sizes). 3 ranks: two-shot, the first exchange a group of sends and receives; 2 ranks:
// one-shot, the first exchange NCCL's all-gather; the descriptors in the heads of the
// payloads. Also the compressed ReduceScatter (sends and receives) and AllGather (NCCL's
// all-gather).
TEST(DeviceAgreementDefault, NcclTransportCompressedChecked) {
  COCCL_REQUIRE_GPU();
  std::vector<Case> cases(std::begin(kCollCases), std::end(kCollCases));
  for (const Case& k : kCases)
    if (k.common.codec) cases.push_back(k);
  int checked = 0;
  for (const int nranks : {3, 2}) {
    for (const Case& k : cases) {
      SCOPED_TRACE(std::string(k.name) + ", " + std::to_string(nranks) + " ranks");
      everyRankFailsBeforeTheCall(k, overNcclTransport(GpuRunOptions()),
                                  "found in the call's first exchange", nranks);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 10);
}

// Compressed calls that agree, under the default check (carried by their first exchange), on
// two streams and in a captured graph launched between them: no false alarm (the eager calls'
// descriptors share the pipeline stream's slot, the graph's calls have their own), and every
// rank's result is the same and near the sum. 3 ranks (two-shot) and 2 (one-shot). The graph's
// launches are ordered with the eager calls by events (the staging is the communicator's: a
// captured call is ordered only by its graph's launch stream, README "CUDA graphs").
TEST(DeviceAgreementDefault, NcclTransportCompressedStreamsAndGraphsNoFalseAlarm) {
  COCCL_REQUIRE_GPU();
  for (const int nranks : {3, 2}) {
    SCOPED_TRACE(std::to_string(nranks) + " ranks");
    GpuRunOptions o = overNcclTransport(GpuRunOptions());
    o.harnessTimeoutS = 150;
    runGpuRanks(
        nranks,
        [nranks](Rank& r) {
          constexpr size_t kA = 65536, kB = 200000, kG = 40000;
          cudaStream_t sa, sb, sg;
          CUDA_OK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
          CUDA_OK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
          CUDA_OK(cudaStreamCreateWithFlags(&sg, cudaStreamNonBlocking));
          cocclCodec_t codec = nullptr;
          ASSERT_EQ(cocclCodecCreate("fp8_ash_ds", &codec), cocclSuccess);
          std::vector<float> h(kB, static_cast<float>(r.rank + 1));
          DevBuf in(kB * 4), outA(kA * 4), outB(kB * 4), outG(kG * 4);
          in.upload(h.data(), kB * 4);
          auto call = [&](DevBuf& out, size_t n, cudaStream_t st) {
            return cocclAllReduceCodec(in.data(), out.data(), n, cocclFloat32, cocclSum, codec,
                                       r.comm, st);
          };
          cudaGraph_t graph = nullptr;
          cudaGraphExec_t exec = nullptr;
          ASSERT_EQ(call(outG, kG, sg), cocclSuccess);  // staging and workspace before capture
          CUDA_OK(cudaStreamSynchronize(sg));
          CUDA_OK(cudaStreamBeginCapture(sg, cudaStreamCaptureModeGlobal));
          ASSERT_EQ(call(outG, kG, sg), cocclSuccess);
          ASSERT_EQ(call(outG, kG - 512, sg), cocclSuccess);
          CUDA_OK(cudaStreamEndCapture(sg, &graph));
          CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
          cudaEvent_t ea, eb, eg;
          CUDA_OK(cudaEventCreateWithFlags(&ea, cudaEventDisableTiming));
          CUDA_OK(cudaEventCreateWithFlags(&eb, cudaEventDisableTiming));
          CUDA_OK(cudaEventCreateWithFlags(&eg, cudaEventDisableTiming));
          for (int i = 0; i < 40; ++i) {
            ASSERT_EQ(call(outA, kA - 256 * static_cast<size_t>(i % 3), sa), cocclSuccess);
            if (i % 10 == 5) {  // after both streams' calls so far; theirs wait for it
              CUDA_OK(cudaEventRecord(ea, sa));
              CUDA_OK(cudaEventRecord(eb, sb));
              CUDA_OK(cudaStreamWaitEvent(sg, ea, 0));
              CUDA_OK(cudaStreamWaitEvent(sg, eb, 0));
              CUDA_OK(cudaGraphLaunch(exec, sg));
              CUDA_OK(cudaEventRecord(eg, sg));
              CUDA_OK(cudaStreamWaitEvent(sa, eg, 0));
              CUDA_OK(cudaStreamWaitEvent(sb, eg, 0));
            }
            ASSERT_EQ(call(outB, kB - 1000 * static_cast<size_t>(i % 5), sb), cocclSuccess);
          }
          syncedWithoutAsyncError(r, {sa, sb, sg});
          const float want = static_cast<float>(nranks * (nranks + 1) / 2);
          for (DevBuf* b : {&outA, &outB, &outG}) {
            const std::vector<uint8_t> got = b->download();
            EXPECT_TRUE(sameOnAllRanks(r, hashBytes(got.data(), got.size()))) << "rank " << r.rank;
            float v;
            std::memcpy(&v, got.data(), 4);
            EXPECT_NEAR(v, want, 0.1 * want) << "rank " << r.rank;
          }
          CUDA_OK(cudaGraphExecDestroy(exec));
          CUDA_OK(cudaGraphDestroy(graph));
          for (cudaEvent_t e : {ea, eb, eg}) cudaEventDestroy(e);
          cocclCodecDestroy(codec);
          cudaStreamDestroy(sa);
          cudaStreamDestroy(sb);
          cudaStreamDestroy(sg);
        },
        o);
  }
}

INSTANTIATE_TEST_SUITE_P(Fields, DeviceAgreement, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Calls that agree keep working with the agreement on (many small calls, graph-free).
void agreeingCallsStillRight(const GpuRunOptions& o) {
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

TEST(DeviceAgreement, CudaIpcAgreeingCallsStillRight) {
  COCCL_REQUIRE_GPU();
  GpuRunOptions o;
  o.env = {{"COCCL_DEVICE_TRANSPORT", "cuda_ipc"}, {"COCCL_DEVICE_EXACT", "coccl"}};
  agreeingCallsStillRight(o);
}

// Over NCCL, the 300 calls' descriptors all pass through the stream's one scratch slot.
TEST(DeviceAgreement, NcclTransportAgreeingCallsStillRight) {
  COCCL_REQUIRE_GPU();
  GpuRunOptions o = overNcclTransport(GpuRunOptions());
  o.env.push_back({"COCCL_NCCL_CALL_CHECK", "2"});
  agreeingCallsStillRight(o);
}

// Over NCCL with the check on, calls on two streams and a captured graph overlap without
// syncs in between: each stream has its own scratch slot and each captured call one the graph
// keeps, so no rank reports a false disagreement (with one slot for all, a later call's
// descriptor, another count, could overwrite one not yet gathered), and the sums are right.
TEST(DeviceAgreement, NcclTransportStreamsAndGraphsNoFalseAlarm) {
  COCCL_REQUIRE_GPU();
  GpuRunOptions o = overNcclTransport(GpuRunOptions());
  o.env.push_back({"COCCL_NCCL_CALL_CHECK", "2"});
  o.harnessTimeoutS = 150;
  runGpuRanks(
      3,
      [](Rank& r) {
        constexpr size_t kA = 1000, kB = 3000, kG = 700;  // counts differ per stream
        cudaStream_t sa, sb, sg;
        CUDA_OK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
        CUDA_OK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
        CUDA_OK(cudaStreamCreateWithFlags(&sg, cudaStreamNonBlocking));
        std::vector<int32_t> h(kB, r.rank + 1);
        DevBuf in(kB * 4), outA(kA * 4), outB(kB * 4), outG1(kG * 4), outG2(kG * 4);
        in.upload(h.data(), kB * 4);
        // Two calls captured into one graph (slots of their own, kept by the graph).
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        CUDA_OK(cudaStreamBeginCapture(sg, cudaStreamCaptureModeGlobal));
        ASSERT_EQ(cocclAllReduce(in.data(), outG1.data(), kG, cocclInt32, cocclSum, r.comm, sg),
                  cocclSuccess);
        ASSERT_EQ(cocclAllReduce(in.data(), outG2.data(), kG - 1, cocclInt32, cocclSum, r.comm, sg),
                  cocclSuccess);
        CUDA_OK(cudaStreamEndCapture(sg, &graph));
        CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
        for (int i = 0; i < 100; ++i) {
          ASSERT_EQ(cocclAllReduce(in.data(), outA.data(), kA - static_cast<size_t>(i % 3),
                                   cocclInt32, cocclSum, r.comm, sa),
                    cocclSuccess);
          if (i % 10 == 5) CUDA_OK(cudaGraphLaunch(exec, sg));
          ASSERT_EQ(cocclAllReduce(in.data(), outB.data(), kB - static_cast<size_t>(i % 5),
                                   cocclInt32, cocclSum, r.comm, sb),
                    cocclSuccess);
        }
        syncedWithoutAsyncError(r, {sa, sb, sg});
        for (DevBuf* b : {&outA, &outB, &outG1}) {
          const std::vector<uint8_t> got = b->download(4);
          int32_t v;
          std::memcpy(&v, got.data(), 4);
          EXPECT_EQ(v, 6) << "rank " << r.rank;
        }
        CUDA_OK(cudaGraphExecDestroy(exec));
        CUDA_OK(cudaGraphDestroy(graph));  // gives the graph's slots back
        // A call after the graph's slots came back still agrees.
        ASSERT_EQ(cocclAllReduce(in.data(), outA.data(), kA, cocclInt32, cocclSum, r.comm, sg),
                  cocclSuccess);
        syncedWithoutAsyncError(r, {sg});
        cudaStreamDestroy(sa);
        cudaStreamDestroy(sb);
        cudaStreamDestroy(sg);
      },
      o);
}

// Exact device Send/Recv over CUDA IPC: a ring of 3 where rank 1 expects 1001 floats from rank
// 0, which sends 1000 (one round of the P2P kernel either way: before the pair agreement the
// last float came from stale inbox bytes, silently). Ranks 0 and 1 fail with cocclInvalidUsage
// naming both sizes (or, one of them, cocclRemoteError when the other end poisoned its flags
// first); rank 2, waiting for rank 1's data, with cocclRemoteError; nobody's receive buffer is
// written.
TEST(DeviceAgreement, CudaIpcSendRecvSizeDiffers) {
  COCCL_REQUIRE_GPU();
  GpuRunOptions o;
  o.config.timeoutMs = 20000;
  o.destroyComm = false;
  o.env = {{"COCCL_DEVICE_TRANSPORT", "cuda_ipc"}};
  runGpuRanks(
      3,
      [](Rank& r) {
        cudaStream_t st;
        CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        const size_t n = 1000, expect = r.rank == 1 ? 1001 : 1000;
        DevBuf in(n * 4, 0x11), out(expect * 4, 0xCD);
        const int next = (r.rank + 1) % 3, prev = (r.rank + 2) % 3;
        ASSERT_EQ(cocclGroupStart(), cocclSuccess);
        ASSERT_EQ(cocclSend(in.data(), n, cocclFloat32, next, r.comm, st), cocclSuccess);
        ASSERT_EQ(cocclRecv(out.data(), expect, cocclFloat32, prev, r.comm, st), cocclSuccess);
        ASSERT_EQ(cocclGroupEnd(), cocclSuccess);
        CUDA_OK(cudaStreamSynchronize(st));
        cocclResult_t async = cocclSuccess;
        ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
        if (r.rank == 2) {
          EXPECT_EQ(async, cocclRemoteError);
        } else {
          EXPECT_TRUE(async == cocclInvalidUsage || async == cocclRemoteError)
              << "rank " << r.rank << ": " << async;
        }
        EXPECT_NE(cocclAllReduce(in.data(), in.data(), 16, cocclFloat32, cocclSum, r.comm, st),
                  cocclSuccess);
        if (async == cocclInvalidUsage) {
          const std::string msg = cocclGetLastError(r.comm);
          EXPECT_NE(msg.find("device Send/Recv of one group disagree: rank 0 sends 1 message "
                             "(4000 bytes) to rank 1, which posted 1 receive (4004 bytes) from "
                             "rank 0"),
                    std::string::npos)
              << "rank " << r.rank << ": " << msg;
        }
        const std::vector<uint8_t> got = out.download();
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], 0xCD) << "rank " << r.rank << ": receive buffer written at " << i;
        EXPECT_TRUE(in.guardsIntact() && out.guardsIntact());
        EXPECT_EQ(cocclCommAbort(r.comm), cocclSuccess);
        cudaStreamDestroy(st);
      },
      o);
}

}  // namespace
}  // namespace coccl::test
