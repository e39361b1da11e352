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

// Receives one compressed message from `from` and checks it against what `from` sent.
void recvAndCheck(Rank& r, cocclCodec_t codec, int from, uint64_t seed) {
  const RankData sent = syntheticInput(cocclBfloat16, kCount, from, seed);
  Guarded out(kCount * 2, 0xFF);
  ASSERT_EQ(cocclRecv(out.data(), kCount, cocclBfloat16, from, r.comm, nullptr), cocclSuccess)
      << "rank " << r.rank << ": " << cocclGetLastError(r.comm);
  EXPECT_EQ(outsideBound(codec, sent.exact, toDoubles(cocclBfloat16, out.data(), kCount)), 0u)
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
  EXPECT_EQ(outsideBound(codec, theirs.exact, toDoubles(cocclBfloat16, out.data(), kCount)), 0u);
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
        // One direction of a step: `from` sends kMicro messages back to back, the other stage
        // receives each and runs a TP exchange after it (kind 0/2 forward, 1/3 backward).
        auto phase = [&](int step, int from, int kind) {
          for (int mb = 0; mb < kMicro; ++mb) {
            if (stage == from) {
              const RankData x =
                  syntheticInput(cocclBfloat16, kCount, r.rank, seedOf(step, mb, kind));
              ASSERT_EQ(cocclSend(x.bytes.data(), kCount, cocclBfloat16, peer, r.comm, nullptr),
                        cocclSuccess)
                  << cocclGetLastError(r.comm);
            } else {
              recvAndCheck(r, codec, peer, seedOf(step, mb, kind));
              tpExchange(r, codec, seedOf(step, mb, kind + 2));
            }
          }
        };
        for (int step = 0; step < kSteps; ++step) {
          phase(step, 0, 0);  // activations, stage 0 -> 1
          phase(step, 1, 1);  // their gradients, stage 1 -> 0
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
