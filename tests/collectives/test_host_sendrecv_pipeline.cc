// Send/Recv in the pattern of a pipeline-parallel trainer (perf/train/parallel.py, GPipe): 4
// ranks as processes, TP 2 x PP 2 in Megatron-LM's order (stage s = rank / 2, pipeline peer
// rank +- 2, TP peer rank ^ 1), all on one communicator as PyTorch runs unbatched P2P on its
// default group. Per step: stage 0 sends four micro-batches' activations back to back (blocking,
// ungrouped) while stage 1 receives them one at a time with a TP exchange (a grouped Send/Recv
// pair with the TP peer) after each; then the gradients the other way; then an exact AllReduce
// of one value over all ranks. Compressed by the SENDRECV policy entry (int8): every received
// element within the codec's bound of what the peer sent, the receive buffers' guards intact.
// Several compressed headers are outstanding on one connection at once, as in the PP training
// runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "coll_util.h"
#include "compressed_util.h"
#include "harness/harness.h"

using namespace coccl::test;

namespace {

constexpr int kSteps = 3, kMicro = 4;
constexpr size_t kRow = 512, kRows = 8, kCount = kRow * kRows;

uint64_t seedOf(int step, int mb, int kind) {
  return 1000u + static_cast<uint64_t>(step) * 100u + static_cast<uint64_t>(mb) * 10u +
         static_cast<uint64_t>(kind);
}

// Elements of got outside the codec's bound for want (blocks of the codec's block size).
size_t outside(cocclCodec_t codec, const std::vector<double>& want,
               const std::vector<double>& got) {
  size_t g = 1;
  EXPECT_EQ(cocclCodecBlockElems(codec, &g), cocclSuccess);
  size_t bad = 0;
  for (size_t b = 0; b < want.size(); b += g) {
    const size_t e = std::min(want.size(), b + g);
    double sq = 0, mx = 0;
    for (size_t i = b; i < e; ++i) {
      sq += want[i] * want[i];
      mx = std::max(mx, std::fabs(want[i]));
    }
    double bound = 0;
    EXPECT_EQ(cocclCodecErrorBound(codec, std::sqrt(sq / static_cast<double>(g)), mx, &bound),
              cocclSuccess);
    for (size_t i = b; i < e; ++i)
      if (!(std::fabs(got[i] - want[i]) <= bound * (1 + 1e-6) + 1e-30)) ++bad;
  }
  return bad;
}

// Receives one compressed message from `from` and checks it against what `from` sent.
void recvAndCheck(Rank& r, cocclCodec_t codec, int from, uint64_t seed) {
  const RankData sent = syntheticInput(cocclBfloat16, kCount, from, seed);
  Guarded out(kCount * 2, 0xFF);
  ASSERT_EQ(cocclRecv(out.data(), kCount, cocclBfloat16, from, r.comm, nullptr), cocclSuccess)
      << "rank " << r.rank << ": " << cocclGetLastError(r.comm);
  EXPECT_EQ(outside(codec, sent.exact, toDoubles(cocclBfloat16, out.data(), kCount)), 0u)
      << "rank " << r.rank << " from " << from << " seed " << seed;
  EXPECT_TRUE(out.guardsIntact());
}

// The TP exchange of one micro-batch: a grouped Send/Recv pair with the TP peer.
void tpExchange(Rank& r, cocclCodec_t codec, uint64_t seed) {
  const int tp = r.rank ^ 1;
  const RankData mine = syntheticInput(cocclBfloat16, kCount, r.rank, seed);
  const RankData theirs = syntheticInput(cocclBfloat16, kCount, tp, seed);
  Guarded out(kCount * 2, 0xFF);
  ASSERT_EQ(cocclGroupStart(), cocclSuccess);
  ASSERT_EQ(cocclSend(mine.bytes.data(), kCount, cocclBfloat16, tp, r.comm, nullptr), cocclSuccess);
  ASSERT_EQ(cocclRecv(out.data(), kCount, cocclBfloat16, tp, r.comm, nullptr), cocclSuccess);
  ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
  EXPECT_EQ(outside(codec, theirs.exact, toDoubles(cocclBfloat16, out.data(), kCount)), 0u);
}

TEST(HostSendRecvPipeline, GPipeScheduleTwoStagesTwoPairs) {
  RunOptions o;
  o.config.timeoutMs = 60000;
  o.config.compressMinBytes = 0;
  o.config.codecSendRecv = "int8";
  runRanks(
      4, Mode::Processes,
      [](Rank& r) {
        cocclCodec_t codec = nullptr;
        ASSERT_EQ(cocclCodecCreate("int8", &codec), cocclSuccess);
        const int stage = r.rank / 2, peer = stage == 0 ? r.rank + 2 : r.rank - 2;
        for (int step = 0; step < kSteps; ++step) {
          for (int mb = 0; mb < kMicro; ++mb) {  // forward
            if (stage == 0) {
              const RankData act =
                  syntheticInput(cocclBfloat16, kCount, r.rank, seedOf(step, mb, 0));
              ASSERT_EQ(cocclSend(act.bytes.data(), kCount, cocclBfloat16, peer, r.comm, nullptr),
                        cocclSuccess)
                  << cocclGetLastError(r.comm);
            } else {
              recvAndCheck(r, codec, peer, seedOf(step, mb, 0));
              tpExchange(r, codec, seedOf(step, mb, 2));
            }
          }
          for (int mb = 0; mb < kMicro; ++mb) {  // backward
            if (stage == 1) {
              const RankData grad =
                  syntheticInput(cocclBfloat16, kCount, r.rank, seedOf(step, mb, 1));
              ASSERT_EQ(cocclSend(grad.bytes.data(), kCount, cocclBfloat16, peer, r.comm, nullptr),
                        cocclSuccess)
                  << cocclGetLastError(r.comm);
            } else {
              recvAndCheck(r, codec, peer, seedOf(step, mb, 1));
              tpExchange(r, codec, seedOf(step, mb, 3));
            }
          }
          float v = static_cast<float>(r.rank + step), sum = 0;
          ASSERT_EQ(cocclAllReduce(&v, &sum, 1, cocclFloat32, cocclSum, r.comm, nullptr),
                    cocclSuccess);
          EXPECT_EQ(sum, static_cast<float>(6 + 4 * step));
        }
        cocclCodecDestroy(codec);
      },
      o);
}

}  // namespace
