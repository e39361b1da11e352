// A policy file (COCCL_POLICY / cocclConfig_t.policy, docs/policy.md) on device buffers: the
// rule that matches a device AllReduce picks its codec (cocclCommGetLastCollStats on 2
// processes sharing one GPU), the threshold of the rule applies, and a Send/Recv the policy
// compresses goes through the rule's codec on device buffers too (values within its bound).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gpu_util.h"

using namespace coccl::test;

namespace {

std::string codecOf(cocclComm_t comm) {
  cocclCollStats_t s{};
  EXPECT_EQ(cocclCommGetLastCollStats(comm, &s), cocclSuccess);
  return s.codec ? s.codec : "";
}

// A policy file with `text` under /tmp, removed at the end of the scope.
struct PolicyFile {
  explicit PolicyFile(const char* text) {
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    if (fd >= 0) close(fd);
    std::ofstream(path) << text;
  }
  ~PolicyFile() { unlink(path); }
  char path[40] = "/tmp/coccl_device_policy_XXXXXX";
};

}  // namespace

TEST(DevicePolicy, RulesPickTheDeviceCodec) {
  COCCL_REQUIRE_GPU();
  const PolicyFile file(R"({"rules": [
    {"collective": "allreduce", "dtype": "bf16", "bytes": {"from": "1M"}, "codec": "int8"},
    {"collective": "allreduce", "codec": "fp8_ash_ds", "min_bytes": "64K"},
    {"collective": "sendrecv", "codec": "int8", "min_bytes": 0}
  ]})");
  GpuRunOptions o;
  o.config.policy = file.path;
  runGpuRanks(
      2,
      [](Rank& r) {
        cudaStream_t s;
        CUDA_OK(cudaStreamCreate(&s));
        struct Case {
          cocclDataType_t dt;
          size_t bytes;
          const char* codec;
        } cases[] = {{cocclBfloat16, 1 << 20, "int8"},
                     {cocclBfloat16, (1 << 20) - 256, "fp8_ash_ds"},
                     {cocclFloat32, 4 << 20, "fp8_ash_ds"},
                     {cocclFloat32, 32 << 10, "none"}};
        for (const Case& c : cases) {
          std::vector<uint16_t> host(c.bytes / 2, 0x3f80);  // bf16 1.0 / a small fp32 pattern
          DevBuf buf(c.bytes);
          buf.upload(host.data(), c.bytes);
          const size_t count = c.bytes / (c.dt == cocclFloat32 ? 4 : 2);
          ASSERT_EQ(cocclAllReduce(buf.data(), buf.data(), count, c.dt, cocclSum, r.comm, s),
                    cocclSuccess)
              << cocclGetLastError(r.comm);
          CUDA_OK(cudaStreamSynchronize(s));
          EXPECT_EQ(codecOf(r.comm), c.codec) << c.bytes << " bytes of type " << c.dt;
        }
        // Send/Recv: the policy compresses it, on device buffers too (device_p2p): int8 values.
        const size_t n = 1 << 15;
        std::vector<uint16_t> xs(n);
        for (size_t i = 0; i < n; ++i) {
          const float v = std::sin(0.01f * static_cast<float>(i));
          uint32_t u;
          std::memcpy(&u, &v, 4);
          xs[i] = static_cast<uint16_t>(u >> 16);  // truncated to bf16: exactly representable
        }
        DevBuf p(n * 2, 0);
        if (r.rank == 0) p.upload(xs.data(), n * 2);
        ASSERT_EQ(r.rank == 0 ? cocclSend(p.data(), n, cocclBfloat16, 1, r.comm, s)
                              : cocclRecv(p.data(), n, cocclBfloat16, 0, r.comm, s),
                  cocclSuccess)
            << cocclGetLastError(r.comm);
        CUDA_OK(cudaStreamSynchronize(s));
        EXPECT_EQ(codecOf(r.comm), "int8");
        if (r.rank == 1) {
          const std::vector<uint8_t> got = p.download();
          double worst = 0;
          for (size_t i = 0; i < n; ++i) {
            uint16_t b;
            std::memcpy(&b, got.data() + 2 * i, 2);
            const uint32_t ub = uint32_t{b} << 16, ux = uint32_t{xs[i]} << 16;
            float d, x;
            std::memcpy(&d, &ub, 4);
            std::memcpy(&x, &ux, 4);
            worst = std::max(worst, std::fabs(double(d) - x));
          }
          // The codec's own bound for a block of |x| <= 1, rms <= 1 (an upper bound for every
          // block here), plus bf16 rounding of the result (<= 2^-9 below 1).
          cocclCodec_t c = nullptr;
          ASSERT_EQ(cocclCodecCreate("int8", &c), cocclSuccess);
          double bound = 0;
          ASSERT_EQ(cocclCodecErrorBound(c, 1.0, 1.0, &bound), cocclSuccess);
          cocclCodecDestroy(c);
          EXPECT_LE(worst, bound + 1.0 / 512);
          EXPECT_GT(worst, 0.0);  // lossy: not the exact path
        }
        cudaStreamDestroy(s);
      },
      o);
}

// A rule's "exact" picks who runs an uncompressed device collective: the real NCCL ("nccl"
// statistics; init brings NCCL up beside CUDA IPC for it, although 2 ranks on one GPU would not
// have it by default), or coccl's kernels ("two-shot" / "direct"); the other calls keep the
// default (coccl's kernels here). Values are exact on every path.
TEST(DevicePolicy, ExactPathOfTheRule) {
  COCCL_REQUIRE_GPU();
  const PolicyFile file(R"({"rules": [
    {"collective": "allreduce", "bytes": {"below": "64K"}, "codec": "none", "exact": "nccl"},
    {"collective": "allreduce", "codec": "none", "exact": "coccl"},
    {"collective": "allgather", "codec": "none", "exact": "nccl"}
  ]})");
  GpuRunOptions o;
  o.config.policy = file.path;
  o.ncclHostIdPerRank = true;
  o.harnessTimeoutS = 300;
  runGpuRanks(
      2,
      [](Rank& r) {
        enum Op { AllReduce, AllGather, ReduceScatter };
        const char* names[] = {"AllReduce", "AllGather", "ReduceScatter"};
        struct Case {
          Op coll;
          size_t count;  // int32 elements (AllGather: per rank)
          const char* algorithm;
        } cases[] = {{AllReduce, 1024, "nccl"},
                     {AllReduce, 1 << 20, "two-shot"},
                     {AllGather, 4096, "nccl"},
                     {ReduceScatter, 4096, "two-shot"}};
        for (const Case& c : cases) {
          const size_t outCount = c.coll == AllGather ? c.count * 2 : c.count;
          const size_t inCount = c.coll == ReduceScatter ? c.count * 2 : c.count;
          std::vector<int32_t> in(inCount);
          for (size_t i = 0; i < inCount; ++i) in[i] = static_cast<int32_t>(i % 1000) + 7 * r.rank;
          DevBuf din(inCount * 4), dout(outCount * 4, 0);
          din.upload(in.data(), inCount * 4);
          cocclResult_t rc =
              c.coll == AllReduce ? cocclAllReduce(din.data(), dout.data(), c.count, cocclInt32,
                                                   cocclSum, r.comm, nullptr)
              : c.coll == AllGather
                  ? cocclAllGather(din.data(), dout.data(), c.count, cocclInt32, r.comm, nullptr)
                  : cocclReduceScatter(din.data(), dout.data(), c.count, cocclInt32, cocclSum,
                                       r.comm, nullptr);
          ASSERT_EQ(rc, cocclSuccess) << cocclGetLastError(r.comm);
          CUDA_OK(cudaDeviceSynchronize());
          cocclCollStats_t st;
          ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
          EXPECT_STREQ(st.algorithm, c.algorithm) << names[c.coll] << " of " << c.count;
          const std::vector<uint8_t> got = dout.download();
          for (size_t i = 0; i < outCount; ++i) {
            int32_t want;
            if (c.coll == AllGather) {
              const size_t q = i / c.count, j = i % c.count;
              want = static_cast<int32_t>(j % 1000) + 7 * static_cast<int32_t>(q);
            } else {
              const size_t j = c.coll == ReduceScatter ? r.rank * c.count + i : i;
              want = 2 * static_cast<int32_t>(j % 1000) + 7;
            }
            int32_t v;
            std::memcpy(&v, got.data() + 4 * i, 4);
            ASSERT_EQ(v, want) << names[c.coll] << " of " << c.count << " at " << i;
          }
        }
      },
      o);
}
