// A policy file (COCCL_POLICY / cocclConfig_t.policy, docs/policy.md) on device buffers: the
// rule that matches a device AllReduce picks its codec (cocclCommGetLastCollStats on 2
// processes sharing one GPU), the threshold of the rule applies, and a Send/Recv the policy
// compresses runs exact on device buffers (said once) with the exact bytes at the receiver.
#include <gtest/gtest.h>
#include <unistd.h>

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

}  // namespace

TEST(DevicePolicy, RulesPickTheDeviceCodec) {
  COCCL_REQUIRE_GPU();
  char path[] = "/tmp/coccl_device_policy_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << R"({"rules": [
    {"collective": "allreduce", "dtype": "bf16", "bytes": {"from": "1M"}, "codec": "int8"},
    {"collective": "allreduce", "codec": "fp8_ash_ds", "min_bytes": "64K"},
    {"collective": "sendrecv", "codec": "int8", "min_bytes": 0}
  ]})";
  GpuRunOptions o;
  o.config.policy = path;
  runGpuRanks(2, [](Rank& r) {
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
                cocclSuccess) << cocclGetLastError(r.comm);
      CUDA_OK(cudaStreamSynchronize(s));
      EXPECT_EQ(codecOf(r.comm), c.codec) << c.bytes << " bytes of type " << c.dt;
    }
    // Send/Recv: the policy compresses it; on device buffers it runs exact.
    std::vector<uint8_t> payload(1 << 16);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7 + 3);
    DevBuf p(payload.size(), 0);
    if (r.rank == 0) p.upload(payload.data(), payload.size());
    const size_t n = payload.size() / 2;
    ASSERT_EQ(r.rank == 0 ? cocclSend(p.data(), n, cocclBfloat16, 1, r.comm, s)
                          : cocclRecv(p.data(), n, cocclBfloat16, 0, r.comm, s),
              cocclSuccess) << cocclGetLastError(r.comm);
    CUDA_OK(cudaStreamSynchronize(s));
    if (r.rank == 1) {
      EXPECT_EQ(p.download(), payload);
    }
    cudaStreamDestroy(s);
  }, o);
  unlink(path);
}
