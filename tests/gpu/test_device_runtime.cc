// Execution properties of the device path: CUDA graph capture and replay with device-side round
// numbers, 2,000 back-to-back AllReduces without host synchronisation, a dead peer (bounded
// device waits, asynchronous error, abort that does not hang), and a small smoke test that the
// compute-sanitizer runs of tests/gpu/run.sh use.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "coll_util.h"
#include "compressed_util.h"
#include "device_cases.h"
#include "gpu_util.h"

using namespace coccl::test;

namespace {

// One compressed AllReduce captured into a CUDA graph, replayed 200 times with a new input each
// time (input = step + rank): every replay bitwise equal to the host path's result for that
// step, never the previous step's. Eager calls in between share the round numbers.
TEST(DeviceRuntime, GraphReplay200) {
  COCCL_REQUIRE_GPU();
  for (int n : {2, 4}) {
    runGpuRanks(n, [](Rank& r) {
      CodecHandle codec("fp8_ash_ds");
      checkGraphReplay(r, codec.c, 200, 50);
    });
  }
}

// 2,000 AllReduces of varying sizes, types and codecs, in and out of place, enqueued back to back
// with a device-side input fill before each and no host synchronisation; every 40th result is
// copied out on the stream and compared with the host path afterwards.
TEST(DeviceRuntime, TwoThousandBackToBack) {
  COCCL_REQUIRE_GPU();
  for (int n : {2, 4}) {
    GpuRunOptions o;
    o.harnessTimeoutS = 400;
    runGpuRanks(n, [](Rank& r) {
      cudaStream_t s;
      CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      CodecHandle fp8("fp8_ash_ds"), int8("int8:block=64");
      const size_t sizes[] = {1, 7, 1000, 32769, 262147, 1048576 + 3};
      const size_t maxCount = 1048576 + 3;
      DevBuf in(maxCount * 4), out(maxCount * 4);
      struct Sample {
        int it;
        size_t count;
        cocclDataType_t dt;
        int codec;
        size_t off;
      };
      std::vector<Sample> samples;
      size_t arena = 0;
      std::mt19937 order(4242);  // the same sequence on every rank
      std::vector<int> plan;
      for (int it = 0; it < 2000; ++it) plan.push_back(static_cast<int>(order() % 1000000));
      for (int it = 0; it < 2000; ++it) {
        if (it % 40 == 0) {
          const int x = plan[static_cast<size_t>(it)];
          const cocclDataType_t dt = x % 2 ? cocclBfloat16 : cocclFloat32;
          samples.push_back({it, sizes[x % 6], dt, (x / 6) % 3, arena});
          arena += sizes[x % 6] * 4;
        }
      }
      uint8_t* pinned = nullptr;
      CUDA_OK(cudaMallocHost(&pinned, arena));
      const cocclCodec_t codecs[3] = {nullptr, fp8.c, int8.c};
      size_t si = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < 2000; ++it) {
        const int x = plan[static_cast<size_t>(it)];
        const cocclDataType_t dt = x % 2 ? cocclBfloat16 : cocclFloat32;
        const size_t count = sizes[x % 6];
        const cocclCodec_t codec = codecs[(x / 6) % 3];
        const bool inPlace = (x / 18) % 2 == 1;
        CUDA_OK(fillPattern(in.data(), count, dt, it, r.rank, s));
        void* dst = inPlace ? in.data() : out.data();
        cocclResult_t res =
            codec ? cocclAllReduceCodec(in.data(), dst, count, dt, cocclSum, codec, r.comm, s)
                  : cocclAllReduce(in.data(), dst, count, dt, cocclSum, r.comm, s);
        ASSERT_EQ(res, cocclSuccess) << "iteration " << it << ": " << cocclGetLastError(r.comm);
        if (si < samples.size() && samples[si].it == it) {
          CUDA_OK(cudaMemcpyAsync(pinned + samples[si].off, dst,
                                  count * (dt == cocclFloat32 ? 4 : 2), cudaMemcpyDeviceToHost, s));
          ++si;
        }
      }
      const double enqueueS =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      CUDA_OK(cudaStreamSynchronize(s));
      const double totalS =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r.rank == 0)
        std::printf("[rank 0] 2000 AllReduces enqueued in %.3f s, done after %.3f s (%d ranks)\n",
                    enqueueS, totalS, r.nranks);
      cocclResult_t async;
      ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
      ASSERT_EQ(async, cocclSuccess);
      for (const Sample& sm : samples) {
        const size_t es = sm.dt == cocclFloat32 ? 4 : 2;
        std::vector<uint8_t> got(pinned + sm.off, pinned + sm.off + sm.count * es);
        std::vector<uint8_t> want = hostReference(r, sm.count, sm.dt, sm.it, 0, codecs[sm.codec]);
        EXPECT_TRUE(sameBytes(got, want, es))
            << "iteration " << sm.it << " count " << sm.count << " codec " << sm.codec;
      }
      cudaFreeHost(pinned);
      cudaStreamDestroy(s);
    }, o);
  }
}

// A rank that never joins: the other ranks' kernels stop at COCCL_TIMEOUT_MS, the stream
// completes, cocclCommGetAsyncError reports it, later calls fail, abort returns promptly.
TEST(DeviceRuntime, DeadPeerTimesOut) {
  COCCL_REQUIRE_GPU();
  GpuRunOptions o;
  o.config.timeoutMs = 3000;
  o.destroyComm = false;
  o.harnessTimeoutS = 120;
  runGpuRanks(3, [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    DevBuf b(1 << 20);
    if (r.rank == 2) {
      // Joins nothing; waits until the others gave up, then sees their poisoned flags. (The
      // same call as theirs: a different count would fail the per-call agreement first.)
      std::this_thread::sleep_for(std::chrono::seconds(6));
      ASSERT_EQ(cocclAllReduce(b.data(), b.data(), 1 << 18, cocclFloat32, cocclSum, r.comm, s),
                cocclSuccess);
      const auto t0 = std::chrono::steady_clock::now();
      CUDA_OK(cudaStreamSynchronize(s));
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0)
          << "a poisoned peer should stop the kernel at once";
      cocclResult_t async = cocclSuccess;
      ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
      EXPECT_EQ(async, cocclRemoteError);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      ASSERT_EQ(cocclAllReduce(b.data(), b.data(), 1 << 18, cocclFloat32, cocclSum, r.comm, s),
                cocclSuccess);
      CUDA_OK(cudaStreamSynchronize(s));
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_GT(t, 2.0);
      EXPECT_LT(t, 30.0);
      cocclResult_t async = cocclSuccess;
      ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
      EXPECT_TRUE(async == cocclSystemError || async == cocclRemoteError) << async;
      EXPECT_NE(cocclAllReduce(b.data(), b.data(), 10, cocclFloat32, cocclSum, r.comm, s),
                cocclSuccess);
      // Let rank 2 run into the poisoned flags before this rank frees its staging.
      std::this_thread::sleep_for(std::chrono::seconds(5));
    }
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_EQ(cocclCommAbort(r.comm), cocclSuccess);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 10.0);
    cudaStreamDestroy(s);
  }, o);
}

// Abort while a kernel waits for a peer that is late: the kernel stops, abort returns.
TEST(DeviceRuntime, AbortStopsWaitingKernel) {
  COCCL_REQUIRE_GPU();
  GpuRunOptions o;
  o.config.timeoutMs = 60000;
  o.destroyComm = false;
  o.harnessTimeoutS = 120;
  runGpuRanks(2, [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    DevBuf b(1 << 20);
    if (r.rank == 0) {
      ASSERT_EQ(cocclAllReduce(b.data(), b.data(), 1 << 18, cocclFloat32, cocclSum, r.comm, s),
                cocclSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    } else {
      std::this_thread::sleep_for(std::chrono::seconds(3));
    }
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(cocclCommAbort(r.comm), cocclSuccess);
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
    cudaStreamDestroy(s);
  }, o);
}

// Small multi-rank case of every device collective (what compute-sanitizer runs).
TEST(DeviceSmoke, EveryCollectiveSmall) {
  COCCL_REQUIRE_GPU();
  GpuRunOptions o;
  o.config.timeoutMs = 600000;  // sanitizers slow kernels down a lot
  o.harnessTimeoutS = 900;
  o.env = {{"COCCL_DEVICE_STAGING_BYTES", "1M"}, {"COCCL_DEVICE_BLOCKS", "4"}};
  runGpuRanks(2, [](Rank& r) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    CodecHandle codec("fp8_ash_ds");
    uint64_t seed = 1;
    for (DColl coll : {DColl::AllReduce, DColl::ReduceScatter, DColl::AllGather,
                       DColl::Broadcast, DColl::Reduce})
      for (bool compressed : {false, true}) {
        if (compressed && (coll == DColl::Broadcast || coll == DColl::Reduce)) continue;
        DCase c;
        c.coll = coll;
        c.dt = cocclBfloat16;
        c.count = 3000 + 7;
        c.codec = compressed ? codec.c : nullptr;
        c.root = 1;
        c.seed = ++seed;
        runAndCompare(r, c, s);
      }
    const int peer = 1 - r.rank;
    DevBuf sb(5000), rb(5000);
    std::vector<uint8_t> d = randomInput(cocclUint8, 5000, 3, r.rank);
    sb.upload(d.data(), d.size());
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    ASSERT_EQ(cocclSend(sb.data(), 5000, cocclUint8, peer, r.comm, s), cocclSuccess);
    ASSERT_EQ(cocclRecv(rb.data(), 5000, cocclUint8, peer, r.comm, s), cocclSuccess);
    ASSERT_EQ(cocclGroupEnd(), cocclSuccess);
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_TRUE(sameBytes(rb.download(), randomInput(cocclUint8, 5000, 3, peer), 1));
    EXPECT_EQ(cocclCommFinalize(r.comm), cocclSuccess);
    cudaStreamDestroy(s);
  }, o);
}

// COCCL_PHASE_TIMES=1: every collective kernel adds its blocks' phases to the counters that
// cocclCommGetPhaseTimes reads, the results stay the host path's, and the phases add up to no
// more than the blocks' whole time; with the codec rings off and on (COCCL_DEVICE_CODEC_RINGS:
// the same bytes either way; ranks that differ are the CPU emulation's DeviceEmulated cases).
TEST(DevicePhaseTimes, CountedAndResultsUnchanged) {
  COCCL_REQUIRE_GPU();
  for (const char* rings : {"0", "1"}) {
    SCOPED_TRACE(std::string("COCCL_DEVICE_CODEC_RINGS=") + rings);
    GpuRunOptions o;
    o.env = {{"COCCL_PHASE_TIMES", "1"}, {"COCCL_DEVICE_CODEC_RINGS", rings}};
    runGpuRanks(
        2,
        [](Rank& r) {
          cudaStream_t s;
          CUDA_OK(cudaStreamCreate(&s));
          CodecHandle codec("fp8_ash_ds");
          cocclPhaseTimes_t t0{};
          ASSERT_EQ(cocclCommGetPhaseTimes(r.comm, &t0), cocclSuccess) << cocclGetLastError(r.comm);
          uint64_t seed = 7;
          for (DColl coll : {DColl::AllReduce, DColl::ReduceScatter, DColl::AllGather})
            for (bool compressed : {false, true}) {
              DCase c;
              c.coll = coll;
              c.dt = cocclBfloat16;
              c.count = (1 << 20) + 5;
              c.codec = compressed ? codec.c : nullptr;
              c.seed = ++seed;
              runAndCompare(r, c, s);
            }
          CUDA_OK(cudaStreamSynchronize(s));
          cocclPhaseTimes_t t1{};
          ASSERT_EQ(cocclCommGetPhaseTimes(r.comm, &t1), cocclSuccess) << cocclGetLastError(r.comm);
          const uint64_t runs = t1.blockRuns - t0.blockRuns;
          EXPECT_GE(runs, 6u);  // every call counted its blocks (how many: the GPU's capacity)
          EXPECT_GE(t1.rounds - t0.rounds, runs);
          uint64_t parts = 0;
          for (int i = 0; i < cocclPhaseTotal; ++i) parts += t1.ns[i] - t0.ns[i];
          EXPECT_GT(t1.ns[cocclPhaseTotal] - t0.ns[cocclPhaseTotal], 0u);
          EXPECT_LE(parts, t1.ns[cocclPhaseTotal] - t0.ns[cocclPhaseTotal]);
          EXPECT_GT(t1.ns[cocclPhaseOwn] - t0.ns[cocclPhaseOwn], 0u);
          EXPECT_GT(t1.ns[cocclPhasePush] - t0.ns[cocclPhasePush], 0u);
          cudaStreamDestroy(s);
        },
        o);
  }
}

}  // namespace
