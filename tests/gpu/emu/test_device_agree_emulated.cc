// The CUDA IPC kernels' per-call agreement (agreeCall in src/collectives/cuda_ipc/
// kernel_common.cuh) run on the CPU emulator (emu/): ranks whose descriptors differ (count,
// also with a different number of blocks per call, op, root) all record kDevMismatch with the
// other rank's descriptor, write nothing to their output, and stop within the timeout; calls
// that agree before it complete with the right values. The P2P kernel's pair agreement
// (p2pAgree in kernels.cuh) likewise: a Send and its Recv that differ in size (within one round
// too), in how a pair's bytes split into messages, or a rank's sends to itself against its
// receives from itself. The staged pipeline's agreement is in
// test_device_agree_staged_emulated.cc. No GPU needed (label collectives).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agree_runs.h"
#include "collectives/cuda_ipc/dev_types.h"

namespace {

using namespace agree_emu;
using coccl::dev::kDevMismatch;
using coccl::dev::kDevPeerFailed;
namespace dev = coccl::dev;

// Every rank failed: its last call, or (one call behind when a peer failed) the call it was in.
// The ranks that compared the differing descriptor recorded the mismatch naming `field` (at
// least one does) and left their output untouched. A rank can instead find its peer's flag
// already poisoned (kDevPeerFailed: the peer detected the mismatch first and poisoned before
// this rank read the descriptor; seen under load in CI, 2026-12-01); it still fails, but its
// last output is not checked (a known gap: such a rank's other blocks may have passed their
// agreement and written; see the closing note of that day).
void expectAllMismatch(const std::vector<Result>& res, const std::string& field) {
  int mismatches = 0;
  for (size_t r = 0; r < res.size(); ++r) {
    EXPECT_TRUE(res[r].error == static_cast<uint32_t>(kDevMismatch) ||
                res[r].error == static_cast<uint32_t>(kDevPeerFailed))
        << "rank " << r << ": error " << res[r].error;
    if (res[r].error != static_cast<uint32_t>(kDevMismatch)) continue;
    ++mismatches;
    EXPECT_NE(res[r].message.find(field), std::string::npos)
        << "rank " << r << ": " << res[r].message;
    ASSERT_FALSE(res[r].out.empty());
    for (float v : res[r].out.back()) {
      ASSERT_EQ(v, -7.0f) << "rank " << r << ": output written";
    }
  }
  EXPECT_GE(mismatches, 1) << "no rank recorded the mismatch";
}

TEST(EmulatedAgreement, CountDiffers) {
  World w(3, 4, 64 << 10);
  std::vector<std::vector<Spec>> calls(3, std::vector<Spec>(1));
  calls[2][0].count = 999;
  const auto res = runCalls(w, calls);
  expectAllMismatch(res, "count differs");
  EXPECT_NE(res[0].message.find("count differs: 1000 on rank 0, 999 on rank 2"), std::string::npos)
      << res[0].message;
}

// The counts give the ranks different numbers of blocks: the extra blocks' channels are
// released by the rank's own error word.
TEST(EmulatedAgreement, CountDiffersWithOtherBlockCounts) {
  World w(2, 8, 256 << 10);
  w.blockBytes = 4096;
  w.minBlocks = 1;
  std::vector<std::vector<Spec>> calls(2, std::vector<Spec>(1));
  calls[0][0].count = 100;
  calls[1][0].count = 40000;
  ASSERT_NE(w.planner(0)
                .reduce(dev::Coll::AllReduce, nullptr, nullptr, 100, 4, cocclFloat32, cocclSum, 0,
                        nullptr)
                .nblocks,
            w.planner(1)
                .reduce(dev::Coll::AllReduce, nullptr, nullptr, 40000, 4, cocclFloat32, cocclSum, 0,
                        nullptr)
                .nblocks);
  expectAllMismatch(runCalls(w, calls), "count differs");
}

// Ranks that pass int32 and float32 (the same bytes a call): only the descriptor differs.
TEST(EmulatedAgreement, DatatypeDiffersWithTheSameBytes) {
  World w(3, 2, 64 << 10);
  std::vector<std::vector<Spec>> calls(3, std::vector<Spec>(1));
  calls[1][0].dt = cocclInt32;
  const auto res = runCalls(w, calls);
  expectAllMismatch(res, "datatype differs");
  EXPECT_NE(res[1].message.find("datatype differs"), std::string::npos) << res[1].message;
}

TEST(EmulatedAgreement, OpDiffersAfterAgreeingCalls) {
  World w(4, 2, 32 << 10);
  std::vector<std::vector<Spec>> calls(4, std::vector<Spec>(4));
  calls[1][3].op = cocclMax;
  const auto res = runCalls(w, calls);
  expectAllMismatch(res, "op differs");
  // The three calls before it agreed and are right (1 + 2 + 3 + 4) on every rank that reached
  // the last call; a rank still in an earlier call when a peer failed is poisoned there.
  for (const Result& r : res) {
    if (r.out.size() < 4u) {
      EXPECT_EQ(r.error, static_cast<uint32_t>(kDevPeerFailed));
      continue;
    }
    for (int i = 0; i < 3; ++i) EXPECT_EQ(r.out[static_cast<size_t>(i)][999], 10.0f);
  }
}

TEST(EmulatedAgreement, BroadcastRootDiffers) {
  World w(3, 2, 32 << 10);
  std::vector<std::vector<Spec>> calls(3, std::vector<Spec>(2));
  for (auto& c : calls)
    for (auto& s : c) s.coll = coccl::Coll::Broadcast;
  calls[0][1].root = 1;
  const auto res = runCalls(w, calls);
  expectAllMismatch(res, "root differs");
  for (const Result& r : res) {
    if (r.out.size() < 2u) {  // poisoned while still in the first call (see expectAllMismatch)
      EXPECT_EQ(r.error, static_cast<uint32_t>(kDevPeerFailed));
      continue;
    }
    EXPECT_EQ(r.out[0][5], 1.0f);  // the first broadcast: rank 0's
  }
}

TEST(EmulatedAgreement, ManyAgreeingCallsReuseTheSlots) {
  World w(3, 2, 32 << 10);
  std::vector<std::vector<Spec>> calls(3, std::vector<Spec>(9));
  for (auto& c : calls)
    for (size_t i = 0; i < c.size(); ++i) c[i].count = 10 + 37 * i;
  const auto res = runCalls(w, calls);
  for (const Result& r : res) {
    EXPECT_EQ(r.error, 0u) << r.message;
    ASSERT_EQ(r.out.size(), 9u);
    for (const auto& o : r.out) EXPECT_EQ(o.back(), 6.0f);
  }
}

// Every rank in `ranks` failed, none wrote a receive buffer, and at least one recorded the
// mismatch with a message containing `says`. As with the collectives' agreement (see
// expectAllMismatch), an end can find the other end's flags already poisoned before it read
// the other's descriptor (kDevPeerFailed): it fails, with the less precise error.
void expectPairMismatch(const std::vector<P2PResult>& res, const std::vector<int>& ranks,
                        const std::string& says) {
  int mismatches = 0;
  for (int r : ranks) {
    const P2PResult& x = res[static_cast<size_t>(r)];
    ASSERT_TRUE(x.error == static_cast<uint32_t>(kDevMismatch) ||
                (ranks.size() > 1 && x.error == static_cast<uint32_t>(kDevPeerFailed)))
        << "rank " << r << ": error " << x.error;
    for (const auto& b : x.recv)
      for (uint8_t v : b) ASSERT_EQ(v, 0xCD) << "rank " << r << ": receive buffer written";
    if (x.error != static_cast<uint32_t>(kDevMismatch)) continue;
    ++mismatches;
    EXPECT_NE(x.message.find(says), std::string::npos) << "rank " << r << ": " << x.message;
  }
  EXPECT_GE(mismatches, 1) << "no rank recorded the mismatch";
}

// 1000 bytes sent, 1001 expected: one round either way (before the agreement the receiver
// took the 1001st byte from the inbox, a silent wrong answer; 999 expected was silently cut).
TEST(EmulatedP2PAgreement, SizeDiffersWithinOneRound) {
  for (size_t expect : {size_t{1001}, size_t{999}}) {
    World w(2, 2, 64 << 10);
    const auto res = runP2P(w, {{{1, true, 1000}}, {{0, false, expect}}});
    expectPairMismatch(res, {0, 1},
                       "rank 0 sends 1 message (1000 bytes) to rank 1, which posted 1 receive (" +
                           std::to_string(expect) + " bytes) from rank 0");
  }
}

TEST(EmulatedP2PAgreement, SameTotalOtherSplit) {
  World w(2, 2, 64 << 10);
  const auto res =
      runP2P(w, {{{1, true, 600}, {1, true, 400}}, {{0, false, 400}, {0, false, 600}}});
  expectPairMismatch(res, {0, 1}, "(the same totals, other message sizes)");
}

TEST(EmulatedP2PAgreement, SelfSendAndReceiveDiffer) {
  World w(2, 2, 64 << 10);
  const auto res = runP2P(w, {{{0, true, 100}, {0, false, 200}}, {}});
  expectPairMismatch(res, {0},
                     "rank 0 sends 1 message (100 bytes) to itself and posted 1 "
                     "receive (200 bytes) from itself");
  EXPECT_EQ(res[1].error, 0u);
}

// A ring of 3 where only the pair (0, 1) disagrees: both record it; rank 2, waiting for rank 1's
// data, is released by the poisoned flags. Then (a fresh world) the same ring agreeing moves
// the bytes.
TEST(EmulatedP2PAgreement, RingOnePairDiffers) {
  {
    World w(3, 2, 64 << 10);
    const auto res = runP2P(w, {{{1, true, 5000}, {2, false, 5000}},
                                {{2, true, 5000}, {0, false, 4999}},
                                {{0, true, 5000}, {1, false, 5000}}});
    expectPairMismatch(res, {0, 1}, "posted 1 receive (4999 bytes) from rank 0");
    EXPECT_TRUE(res[2].error == static_cast<uint32_t>(kDevPeerFailed)) << res[2].error;
    for (uint8_t v : res[2].recv[1]) ASSERT_EQ(v, 0xCD) << "rank 2: receive buffer written";
  }
  World w(3, 2, 64 << 10);
  const auto res = runP2P(w, {{{1, true, 5000}, {2, false, 5000}},
                              {{2, true, 5000}, {0, false, 5000}},
                              {{0, true, 5000}, {1, false, 5000}}});
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(res[static_cast<size_t>(r)].error, 0u) << res[static_cast<size_t>(r)].message;
    const int from = (r + 2) % 3;
    for (uint8_t v : res[static_cast<size_t>(r)].recv[1]) ASSERT_EQ(v, from * 16);
  }
}

}  // namespace
