// cocclAllGatherDelta on device buffers (label gpu): 2 and 3 processes sharing one GPU, over
// CUDA IPC and over the NCCL transport. Every step of a drifting weight vector, the device
// call's recvbuff equals bit for bit the host call's (same inputs, same previous values: the
// same chunks, codec bytes and element rule), on every rank; the reset call is exact; a
// disagreeing reset flag fails on every rank with recvbuff untouched; the statistics.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "coll_util.h"
#include "collectives/delta/delta_device.h"
#include "collectives/layout.h"
#include "compressed_util.h"
#include "gpu_util.h"

using namespace coccl::test;

namespace {

GpuRunOptions ipc() {
  GpuRunOptions o;
  o.config.timeoutMs = 60000;
  o.config.compressMinBytes = 0;
  o.env = {{"COCCL_CHUNK_BYTES", "65536"}};
#ifdef COCCL_INT4_PLUGIN
  o.env.push_back({"COCCL_CODEC_PLUGIN", COCCL_INT4_PLUGIN});
#endif
  return o;
}

GpuRunOptions overNccl() { return overNcclTransport(ipc()); }

std::vector<const char*> codecs() {
  std::vector<const char*> v = {"int8", "fp8_ash_ds", "int8:block=32,rotate=0"};
#ifdef COCCL_INT4_PLUGIN
  v.push_back("int4");
  v.push_back("int4:block=2048");
#endif
  return v;
}

// Bytes the device difference path sends beyond the host's: per piece of the host's chunking
// (COCCL_CHUNK_BYTES, ipc() sets it), the payload rounded up to 256 bytes, to p-1 peers.
size_t devicePadding(cocclCodec_t codec, size_t n, size_t es, int p) {
  size_t block = 0;
  EXPECT_EQ(cocclCodecBlockElems(codec, &block), cocclSuccess);
  const char* cb = getenv("COCCL_CHUNK_BYTES");
  const size_t chunk = coccl::chunkElems(cb ? strtoull(cb, nullptr, 10) : size_t{1} << 20, es, block);
  size_t pad = 0;
  for (size_t b = 0; b < n; b += chunk) {
    size_t e = 0;
    EXPECT_EQ(cocclCodecEncodedBytes(codec, std::min(chunk, n - b), cocclFloat32, &e),
              cocclSuccess);
    pad += ((e + 255) / 256 * 256 - e) * static_cast<size_t>(p - 1);
  }
  return pad;
}

// `steps` difference calls after a reset, device and host side by side, bitwise equal.
void deviceMatchesHost(Rank& r, const char* algoPrefix) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  const int p = r.nranks;
  for (const char* spec : codecs()) {
    CodecHandle codec(spec);
    for (cocclDataType_t dt : {cocclFloat32, cocclBfloat16, cocclFloat16})
      for (size_t n : {size_t{7}, size_t{4099}, size_t{100003}}) {
        const size_t es = elemSize(dt);
        std::mt19937_64 rng(77 + r.rank + n);
        std::normal_distribution<double> nd(0.0, 1.0);
        std::vector<double> w(n);
        for (double& x : w) x = nd(rng);
        std::vector<uint8_t> send(n * es), host(n * p * es, 0);
        DevBuf dsend(n * es), dout(n * p * es);
        for (int t = 0; t <= 6; ++t) {
          if (t > 0)
            for (double& x : w) x += 0.01 * nd(rng);
          if (t == 3) w[n / 2] = INFINITY;  // a RAW block, then a non-finite previous value
          if (t == 5) w[n / 2] = 0.5;       // healed: the new value, not Inf - Inf
          for (size_t i = 0; i < n; ++i) setElem(dt, send.data(), i, w[i]);
          dsend.upload(send.data(), send.size());
          const unsigned flags = t == 0 ? COCCL_DELTA_RESET : 0u;
          ASSERT_EQ(
              cocclAllGatherDelta(dsend.data(), dout.data(), n, dt, codec.c, flags, r.comm, s),
              cocclSuccess)
              << cocclGetLastError(r.comm);
          cocclCollStats_t st{};
          ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
          const std::string algo = st.algorithm;
          const size_t wire = st.wireBytesSent;
          CUDA_OK(cudaStreamSynchronize(s));
          ASSERT_EQ(
              cocclAllGatherDelta(send.data(), host.data(), n, dt, codec.c, flags, r.comm, nullptr),
              cocclSuccess)
              << cocclGetLastError(r.comm);
          ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
          if (t > 0) {
            EXPECT_EQ(algo.rfind(algoPrefix, 0), 0u) << algo;
            // The host's headers + payloads, plus the padding the device gather moves: each
            // payload travels in a 256-byte aligned stride (delta_device.cc), to p-1 peers.
            EXPECT_EQ(wire, st.wireBytesSent + devicePadding(codec.c, n, es, p)) << spec;
          }
          const std::vector<uint8_t> dev = dout.download();
          for (size_t i = 0; i < n * p; ++i) {
            const double a = getElem(dt, dev.data(), i), b = getElem(dt, host.data(), i);
            if (std::isnan(a) && std::isnan(b)) continue;
            ASSERT_EQ(std::memcmp(dev.data() + i * es, host.data() + i * es, es), 0)
                << spec << " " << typeName(dt) << " n " << n << " step " << t << " element " << i
                << ": device " << a << " host " << b;
          }
          ASSERT_TRUE(dout.guardsIntact());
          if (t == 0) {
            ASSERT_EQ(std::memcmp(dev.data() + r.rank * n * es, send.data(), n * es), 0);
          }
          ASSERT_TRUE(sameOnAllRanks(r, hashBytes(dev.data(), dev.size())));
        }
      }
  }
  // Disagreeing reset flags: every rank fails, nothing written.
  CodecHandle codec("int8");
  const size_t n = 5000;
  DevBuf dsend(n * 4), dout(n * p * 4);
  ASSERT_EQ(cocclAllGatherDelta(dsend.data(), dout.data(), n, cocclFloat32, codec.c,
                                COCCL_DELTA_RESET, r.comm, s),
            cocclSuccess);
  CUDA_OK(cudaStreamSynchronize(s));
  const std::vector<uint8_t> before = dout.download();
  EXPECT_EQ(cocclAllGatherDelta(dsend.data(), dout.data(), n, cocclFloat32, codec.c,
                                r.rank == p - 1 ? COCCL_DELTA_RESET : 0u, r.comm, s),
            cocclInvalidUsage);
  EXPECT_NE(std::string(cocclGetLastError(r.comm)).find("reset flag"), std::string::npos);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(dout.download(), before);
  ASSERT_EQ(cocclAllGatherDelta(dsend.data(), dout.data(), n, cocclFloat32, codec.c, 0u, r.comm, s),
            cocclSuccess);
  CUDA_OK(cudaStreamSynchronize(s));
  cudaStreamDestroy(s);
}

class DeviceDelta : public ::testing::TestWithParam<int> {};

TEST_P(DeviceDelta, CudaIpcMatchesHostBitwise) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(
      GetParam(), [](Rank& r) { deviceMatchesHost(r, "delta/"); }, ipc());
}

TEST_P(DeviceDelta, NcclTransportMatchesHostBitwise) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(
      GetParam(), [](Rank& r) { deviceMatchesHost(r, "delta/"); }, overNccl());
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceDelta, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::to_string(i.param) + "ranks";
                         });

}  // namespace
