// Compressed Send/Recv on device buffers (src/collectives/p2p_device/): against the host path
// bit for bit (the same call on host buffers, the same codec), on CUDA IPC and the NCCL
// transport, 2 and 3 processes on one GPU: a ring in a group, an all-to-all with self on two
// streams, ungrouped rounds; wire bytes = payload + 128-byte header / verdict; a disagreeing
// receiver fails at once without touching recvbuff, the sender at its next group.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "coll_util.h"
#include "compressed_util.h"
#include "gpu_util.h"

using namespace coccl::test;

namespace {

GpuRunOptions ipc() {
  GpuRunOptions o;
  o.config.timeoutMs = 60000;
  o.config.compressMinBytes = 0;
  std::string plugins;
#ifdef COCCL_INT4_PLUGIN
  plugins = COCCL_INT4_PLUGIN;
#endif
#ifdef COCCL_TAH_PLUGIN
  plugins += std::string(plugins.empty() ? "" : ",") + COCCL_TAH_PLUGIN;
#endif
  if (!plugins.empty()) o.env.push_back({"COCCL_CODEC_PLUGIN", plugins});
  return o;
}

GpuRunOptions overNccl() { return overNcclTransport(ipc()); }

std::vector<const char*> codecs() {
  std::vector<const char*> v = {"int8", "fp8_ash_ds"};
#ifdef COCCL_INT4_PLUGIN
  v.push_back("int4");
#endif
#ifdef COCCL_TAH_PLUGIN
  v.push_back("tah:row=512,strict=0");  // 4099 and the all-to-all: partial rows
#endif
  return v;
}

// Values of a message from `from` to `to`: normal, one outlier a row of 512.
std::vector<uint8_t> message(cocclDataType_t dt, size_t n, int from, int to, int round) {
  std::mt19937_64 rng(1000 * from + 10 * to + round + n);
  std::normal_distribution<double> nd(0.5 * from, 1.0 + to);
  std::vector<uint8_t> v(n * elemSize(dt));
  for (size_t i = 0; i < n; ++i) setElem(dt, v.data(), i, i % 512 == 17 ? 40.0 : nd(rng));
  return v;
}

// The same exchange on host buffers (the host executor), for the reference bytes.
std::vector<uint8_t> hostRecv(Rank& r, const std::vector<uint8_t>& out, int to, int from,
                              size_t n, cocclDataType_t dt, cocclCodec_t c) {
  std::vector<uint8_t> got(n * elemSize(dt), 0);
  EXPECT_EQ(cocclGroupStart(), cocclSuccess);
  EXPECT_EQ(cocclSendCodec(out.data(), n, dt, to, c, r.comm, nullptr), cocclSuccess);
  EXPECT_EQ(cocclRecvCodec(got.data(), n, dt, from, c, r.comm, nullptr), cocclSuccess);
  EXPECT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
  return got;
}

void ringAndAllToAll(Rank& r, const char* algoPrefix) {
  const int p = r.nranks, me = r.rank;
  cudaStream_t s, s2;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaStreamCreate(&s2));
  for (const char* spec : codecs()) {
    CodecHandle codec(spec);
    for (cocclDataType_t dt : {cocclFloat32, cocclBfloat16, cocclFloat16})
      for (size_t n : {size_t{512}, size_t{4099}, size_t{512 * 257}}) {
        const size_t es = elemSize(dt);
        const int to = (me + 1) % p, from = (me - 1 + p) % p;
        const std::vector<uint8_t> mine = message(dt, n, me, to, 0);
        DevBuf sb(n * es), rb(n * es);
        sb.upload(mine.data(), mine.size());
        ASSERT_EQ(cocclGroupStart(), cocclSuccess);
        ASSERT_EQ(cocclSendCodec(sb.data(), n, dt, to, codec.c, r.comm, s), cocclSuccess);
        ASSERT_EQ(cocclRecvCodec(rb.data(), n, dt, from, codec.c, r.comm, s), cocclSuccess);
        ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
        cocclCollStats_t st{};
        ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
        EXPECT_EQ(std::string(st.algorithm).rfind(algoPrefix, 0), 0u) << st.algorithm;
        // payload + this rank's header (as sender) and verdict (as receiver)
        EXPECT_EQ(st.wireBytesSent, codec.encoded(n, dt) + 2 * 128) << spec;
        CUDA_OK(cudaStreamSynchronize(s));
        const std::vector<uint8_t> want = hostRecv(r, mine, to, from, n, dt, codec.c);
        ASSERT_TRUE(sameValues(rb.download(), want, dt))
            << spec << " " << typeName(dt) << " n " << n;
        ASSERT_TRUE(sb.guardsIntact() && rb.guardsIntact());
        ASSERT_EQ(sb.download(), mine);  // the send buffer is read only
      }
    // All-to-all with self: sizes differ per pair, receives on a second stream.
    const cocclDataType_t dt = cocclBfloat16;
    auto size = [](int from, int to) { return size_t{512} * (3 + from) + 64 * to; };
    std::vector<std::unique_ptr<DevBuf>> sbuf(p), rbuf(p);
    std::vector<std::vector<uint8_t>> sent(p);
    for (int j = 0; j < p; ++j) {
      sent[j] = message(dt, size(me, j), me, j, 1);
      sbuf[j] = std::make_unique<DevBuf>(sent[j].size());
      sbuf[j]->upload(sent[j].data(), sent[j].size());
      rbuf[j] = std::make_unique<DevBuf>(size(j, me) * 2);
    }
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    for (int j = 0; j < p; ++j) {
      ASSERT_EQ(cocclSendCodec(sbuf[j]->data(), size(me, j), dt, j, codec.c, r.comm, s),
                cocclSuccess);
      ASSERT_EQ(cocclRecvCodec(rbuf[j]->data(), size(j, me), dt, j, codec.c, r.comm, s2),
                cocclSuccess);
    }
    ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
    CUDA_OK(cudaStreamSynchronize(s2));
    CUDA_OK(cudaStreamSynchronize(s));
    std::vector<std::vector<uint8_t>> want(p);
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    for (int j = 0; j < p; ++j) {
      want[j].assign(size(j, me) * 2, 0);
      ASSERT_EQ(cocclSendCodec(sent[j].data(), size(me, j), dt, j, codec.c, r.comm, nullptr),
                cocclSuccess);
      ASSERT_EQ(cocclRecvCodec(want[j].data(), size(j, me), dt, j, codec.c, r.comm, nullptr),
                cocclSuccess);
    }
    ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
    for (int j = 0; j < p; ++j)
      EXPECT_TRUE(sameValues(rbuf[j]->download(), want[j], dt)) << spec << " from " << j;
  }
  // Ungrouped rounds between ranks 0 and 1 (a pipeline's activations forward, gradients back).
  if (me < 2) {
    CodecHandle codec(codecs().back());
    const size_t n = 512 * 64;
    DevBuf a(n * 2), g(n * 2);
    for (int round = 0; round < 4; ++round) {
      const std::vector<uint8_t> act = message(cocclBfloat16, n, 0, 1, round);
      const std::vector<uint8_t> grad = message(cocclBfloat16, n, 1, 0, round);
      if (me == 0) {
        a.upload(act.data(), act.size());
        ASSERT_EQ(cocclSendCodec(a.data(), n, cocclBfloat16, 1, codec.c, r.comm, s),
                  cocclSuccess);
        ASSERT_EQ(cocclRecvCodec(g.data(), n, cocclBfloat16, 1, codec.c, r.comm, s),
                  cocclSuccess) << cocclGetLastError(r.comm);
      } else {
        g.upload(grad.data(), grad.size());
        ASSERT_EQ(cocclRecvCodec(a.data(), n, cocclBfloat16, 0, codec.c, r.comm, s),
                  cocclSuccess) << cocclGetLastError(r.comm);
        ASSERT_EQ(cocclSendCodec(g.data(), n, cocclBfloat16, 0, codec.c, r.comm, s),
                  cocclSuccess);
      }
      CUDA_OK(cudaStreamSynchronize(s));
      // The received values are the codec's round trip of what the peer sent.
      const std::vector<uint8_t>& theirs = me == 0 ? grad : act;
      const std::vector<uint8_t> got = me == 0 ? g.download() : a.download();
      double err = 0, ref = 0;
      for (size_t i = 0; i < n; ++i) {
        const double x = getElem(cocclBfloat16, theirs.data(), i);
        const double y = getElem(cocclBfloat16, got.data(), i);
        err += (x - y) * (x - y);
        ref += x * x;
      }
      EXPECT_LT(std::sqrt(err / ref), 0.1) << "round " << round;
    }
  }
  cudaStreamDestroy(s);
  cudaStreamDestroy(s2);
}

// Every rank of the communicator, through host buffers (the host executor).
void hostBarrier(Rank& r) {
  int one = 1, sum = 0;
  ASSERT_EQ(cocclAllReduce(&one, &sum, 1, cocclInt32, cocclSum, r.comm, nullptr), cocclSuccess);
  ASSERT_EQ(sum, r.nranks);
}

// Rank 1 receives what rank 0 sends with another count, then another codec: rank 1 fails at
// once (recvbuff untouched), rank 0 at its next group (whose own Send still ran); then a
// matching pair succeeds on both.
void disagreement(Rank& r) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  CodecHandle int8("int8"), fp8("fp8_ash_ds");
  const size_t n = 8192;
  DevBuf b(n * 4, 0x11), x(n * 4, 0x22);
  const std::vector<uint8_t> before = b.download();
  struct Case {
    size_t recvCount;
    cocclCodec_t recvCodec;
    const char* field;
  } cases[] = {{n - 2, int8.c, "count"}, {n, fp8.c, "codec"}};
  for (const Case& c : cases) {
    if (r.rank == 0) {
      ASSERT_EQ(cocclSendCodec(b.data(), n, cocclFloat32, 1, int8.c, r.comm, s), cocclSuccess);
    } else if (r.rank == 1) {
      EXPECT_EQ(cocclRecvCodec(b.data(), c.recvCount, cocclFloat32, 0, c.recvCodec, r.comm, s),
                cocclInvalidUsage);
      const std::string msg = cocclGetLastError(r.comm);
      EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
    }
    CUDA_OK(cudaStreamSynchronize(s));
    if (r.rank == 1) {
      EXPECT_EQ(b.download(), before) << c.field;
    }
    hostBarrier(r);  // rank 1's verdict left before its barrier contribution
    for (int round = 0; round < 2; ++round) {
      if (r.rank == 0) {
        const cocclResult_t e = cocclSendCodec(x.data(), n, cocclFloat32, 1, int8.c, r.comm, s);
        if (round == 0) {
          EXPECT_EQ(e, cocclInvalidUsage) << c.field;
          const std::string msg = cocclGetLastError(r.comm);
          EXPECT_NE(msg.find("earlier compressed Send"), std::string::npos) << msg;
          EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
        } else {
          EXPECT_EQ(e, cocclSuccess) << cocclGetLastError(r.comm);
        }
      } else if (r.rank == 1) {
        EXPECT_EQ(cocclRecvCodec(x.data(), n, cocclFloat32, 0, int8.c, r.comm, s), cocclSuccess)
            << cocclGetLastError(r.comm);
      }
      CUDA_OK(cudaStreamSynchronize(s));
    }
    hostBarrier(r);
  }
  cudaStreamDestroy(s);
}

class DeviceP2P : public ::testing::TestWithParam<int> {};

TEST_P(DeviceP2P, CudaIpcMatchesHostBitwise) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) { ringAndAllToAll(r, "p2p-codec/p2p"); }, ipc());
}

TEST_P(DeviceP2P, NcclTransportMatchesHostBitwise) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), [](Rank& r) { ringAndAllToAll(r, "p2p-codec/p2p/nccl"); },
              overNccl());
}

TEST_P(DeviceP2P, DisagreementFailsBothEndsCudaIpc) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), disagreement, ipc());
}

TEST_P(DeviceP2P, DisagreementFailsBothEndsNccl) {
  COCCL_REQUIRE_GPU();
  runGpuRanks(GetParam(), disagreement, overNccl());
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceP2P, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::to_string(i.param) + "ranks";
                         });

}  // namespace
