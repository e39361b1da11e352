// The staged codec pipeline's agreement on the CPU emulator (emu/): the first exchange of a
// call (P2PArgs::callAgree) carries the call's descriptor, compared with every rank's whatever
// the group, beside the fused kernels' agreement on the same channels; ranks that differ all
// report it, an abort or a dead peer releases the others without a second timeout. No GPU
// needed (label collectives).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agree_runs.h"
#include "collectives/cuda_ipc/dev_types.h"

namespace {

using namespace agree_emu;
using coccl::dev::Ctx;
using coccl::dev::kDevMismatch;
using coccl::dev::kDevPeerFailed;
namespace dev = coccl::dev;

// Ranks whose staged calls differ only in the op (the same payload bytes: nothing else compares
// them): the descriptors, posted at the first exchange's start and compared at its end, differ;
// every rank reports the difference (the exchange's pieces reached staging buffers only).
TEST(EmulatedStagedAgreement, OpDiffersFailsEveryRank) {
  World w(3, 2, 64 << 10);
  std::vector<std::vector<Step>> steps(3);
  for (int r = 0; r < 3; ++r) {
    Step s;
    s.spec.count = 4096;
    s.spec.op = r == 2 ? cocclAvg : cocclSum;
    s.agree = true;
    s.msgs = allToAll(3, r, 3000);
    steps[static_cast<size_t>(r)] = {s};
  }
  const auto res = runSteps(w, steps);
  for (int r = 0; r < 3; ++r) {
    const StepsResult& x = res[static_cast<size_t>(r)];
    ASSERT_EQ(x.error, static_cast<uint32_t>(kDevMismatch)) << "rank " << r;
    EXPECT_EQ(x.from, static_cast<uint32_t>(dev::kAgreeInStagedExchange)) << "rank " << r;
    EXPECT_NE(x.message.find("op differs"), std::string::npos) << "rank " << r << ": " << x.message;
  }
}

// Ranks whose counts differ so much that their first exchanges differ in the number of rounds
// (rank 1 expects 40 rounds of every peer, they expect one of it): the ranks that finish first
// find the difference and poison the others' data flags; rank 1, stopped in its second round,
// compares the descriptors its peers posted and reports the difference too, long before the
// timeout.
TEST(EmulatedStagedAgreement, CountDiffersInTheNumberOfRounds) {
  World w(3, 2, 4 << 10);
  for (Ctx& c : w.ctx) c.timeoutNs = 20ull * 1000000000ull;
  std::vector<std::vector<Step>> steps(3);
  for (int r = 0; r < 3; ++r) {
    Step s;
    s.spec.count = r == 1 ? 80000 : 1000;
    s.agree = true;
    s.msgs = allToAll(3, r, r == 1 ? 320000 : 4000);
    steps[static_cast<size_t>(r)] = {s};
  }
  double secs = 0;
  const auto res = runStepsTimed(w, steps, &secs);
  for (int r = 0; r < 3; ++r) {
    const StepsResult& x = res[static_cast<size_t>(r)];
    ASSERT_EQ(x.error, static_cast<uint32_t>(kDevMismatch)) << "rank " << r;
    EXPECT_EQ(x.from, static_cast<uint32_t>(dev::kAgreeInStagedExchange)) << "rank " << r;
    EXPECT_NE(x.message.find("count differs"), std::string::npos)
        << "rank " << r << ": " << x.message;
  }
  EXPECT_LT(secs, 10.0) << "released by the timeout, not by the poison";
}

// A rank whose staged call fails before its first exchange (a codec kernel that failed to
// launch) aborts: the peers waiting in that exchange's agreement are released by the poisoned
// agreement flags at once (kDevPeerFailed), not by their timeout.
TEST(EmulatedStagedAgreement, AbortBeforeTheFirstExchangeReleasesThePeers) {
  World w(3, 2, 64 << 10);
  for (Ctx& c : w.ctx) c.timeoutNs = 20ull * 1000000000ull;
  std::vector<std::vector<Step>> steps(3);
  Step dead;
  dead.poison = true;
  steps[0] = {dead};
  for (int r = 1; r < 3; ++r) steps[static_cast<size_t>(r)] = {firstExchange(3, r)};
  double secs = 0;
  const auto res = runStepsTimed(w, steps, &secs);
  EXPECT_EQ(res[0].error, static_cast<uint32_t>(dev::kDevAborted));
  for (int r = 1; r < 3; ++r)
    EXPECT_EQ(res[static_cast<size_t>(r)].error, static_cast<uint32_t>(kDevPeerFailed))
        << "rank " << r;
  EXPECT_LT(secs, 10.0) << "released by the timeout, not by the poison";
}

// A peer that never runs the call (a dead process): the others' rounds time out once, and the
// comparison after them does not wait a second timeout for that peer's descriptor.
TEST(EmulatedStagedAgreement, APeerThatNeverRunsCostsOneTimeout) {
  World w(3, 2, 64 << 10);
  for (Ctx& c : w.ctx) c.timeoutNs = 2ull * 1000000000ull;
  std::vector<std::vector<Step>> steps(3);  // rank 0: nothing
  for (int r = 1; r < 3; ++r) steps[static_cast<size_t>(r)] = {firstExchange(3, r)};
  double secs = 0;
  const auto res = runStepsTimed(w, steps, &secs);
  for (int r = 1; r < 3; ++r)
    EXPECT_EQ(res[static_cast<size_t>(r)].error, static_cast<uint32_t>(dev::kDevTimeout))
        << "rank " << r;
  EXPECT_LT(secs, 3.5) << "a second timeout after the rounds'";
}

// Staged calls that agree, between fused calls on the same channels: call 0 fused, call 1 a
// staged call of two exchanges (the first agreeing), call 2 a staged call in which rank 2's
// group is empty (it still takes part in the agreement), call 3 fused; 4 rounds of it (the
// agreement slots' parity wraps). Every byte and sum arrives.
TEST(EmulatedStagedAgreement, AgreeingCallsBesideFusedOnes) {
  World w(3, 2, 64 << 10);
  std::vector<std::vector<Step>> steps(3);
  for (int r = 0; r < 3; ++r)
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t c0 = 4 * round;
      Step f;
      f.fused = true;
      f.spec.count = 100 + round;
      f.seq = c0;
      Step x1, x2, y;
      x1.spec.count = x2.spec.count = 5000;
      x1.seq = x2.seq = c0 + 1;
      x1.agree = true;
      x1.msgs = allToAll(3, r, 2000);
      x2.msgs = allToAll(3, r, 700);
      y.spec.count = 77;
      y.seq = c0 + 2;
      y.agree = true;
      if (r < 2) y.msgs = {{1 - r, true, 300}, {1 - r, false, 300}};
      Step g = f;
      g.seq = c0 + 3;
      auto& v = steps[static_cast<size_t>(r)];
      v.insert(v.end(), {f, x1, x2, y, g});
    }
  const auto res = runSteps(w, steps);
  for (int r = 0; r < 3; ++r) {
    const StepsResult& x = res[static_cast<size_t>(r)];
    ASSERT_EQ(x.error, 0u) << "rank " << r << ": " << x.message;
    ASSERT_EQ(x.out.size(), 8u);
    for (const auto& o : x.out)
      for (float v : o) ASSERT_EQ(v, 6.0f) << "rank " << r;
    ASSERT_EQ(x.recv.size(), 12u);
    for (size_t e = 0; e < x.recv.size(); ++e) {
      const int stepOfExchange = static_cast<int>(e / 3) * 5 + 1 + static_cast<int>(e % 3);
      const auto& msgs = steps[static_cast<size_t>(r)][static_cast<size_t>(stepOfExchange)].msgs;
      for (size_t k = 0; k < msgs.size(); ++k) {
        if (msgs[k].send) continue;
        const uint8_t want = static_cast<uint8_t>(msgs[k].peer * 16 + stepOfExchange);
        for (uint8_t v : x.recv[e][k]) ASSERT_EQ(v, want) << "rank " << r << " exchange " << e;
      }
    }
  }
}

}  // namespace
