// The CUDA IPC kernels' per-call agreement (agreeCall in src/collectives/cuda_ipc/
// kernel_common.cuh) run on the CPU emulator (emu/): ranks whose descriptors differ (count,
// also with a different number of blocks per call, op, root) all record kDevMismatch with the
// other rank's descriptor, write nothing to their output, and stop within the timeout; calls
// that agree before it complete with the right values. The P2P kernel's pair agreement
// (p2pAgree in kernels.cuh) likewise: a Send and its Recv that differ in size (within one round
// too), in how a pair's bytes split into messages, or a rank's sends to itself against its
// receives from itself. The staged codec pipeline's first exchange of a call (P2PArgs::
// callAgree): the call's descriptor compared with every rank's, whatever the group, beside the
// fused kernels' agreement on the same channels. No GPU needed (label collectives).
#include <cuda_runtime.h>  // emu/cuda_runtime.h
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collectives/call_desc.h"
#include "collectives/cuda_ipc/kernels.cuh"
#include "collectives/p2p_header.h"
#include "emu_device.h"
#include "emu_world.h"

namespace {

using namespace coccl;
using coccl::dev::Ctx;
using coccl::dev::ExactMode;
using coccl::dev::GatherArgs;
using coccl::dev::HostState;
using coccl::dev::kDevMismatch;
using coccl::dev::kDevPeerFailed;
using coccl::dev::P2PArgs;
using coccl::dev::P2PMsg;
using coccl::dev::Planner;
using coccl::dev::ReduceArgs;
using coccl_emu::EmuDevice;
using coccl_emu::World;

struct Spec {
  coccl::Coll coll = coccl::Coll::AllReduce;
  size_t count = 1000;  // float32 elements
  cocclRedOp_t op = cocclSum;
  int root = 0;
  // the descriptor's datatype (the kernels move float32: a type of the same size, as int32,
  // is a difference that only the descriptor shows)
  cocclDataType_t dt = cocclFloat32;
};

struct Result {
  std::vector<std::vector<float>> out;  // per call
  uint32_t error = 0;
  std::string message;  // callDescPairMismatch of the recorded descriptors
};

// The descriptor of call number `seq` of spec s (exact; float32 unless s.dt says otherwise).
CallDesc descOf(const Spec& s, uint64_t seq) {
  CollRequest q;
  q.coll = s.coll;
  q.count = s.count;
  q.dt = s.dt;
  q.op = s.op;
  q.root = s.root;
  q.seq = seq;
  return makeCallDesc(q);
}

// Rank r runs calls[r][0..] back to back (exact float32, inputs rank + 1), stopping at the
// first device error.
std::vector<Result> runCalls(World& w, const std::vector<std::vector<Spec>>& calls) {
  const int p = w.p;
  std::vector<Result> res(static_cast<size_t>(p));
  std::vector<std::thread> ranks;
  for (int r = 0; r < p; ++r)
    ranks.emplace_back([&, r] {
      EmuDevice d(w.nb);
      const Ctx* ctx = &w.ctx[static_cast<size_t>(r)];
      const Planner pl = w.planner(r);
      Result& out = res[static_cast<size_t>(r)];
      for (size_t i = 0; i < calls[static_cast<size_t>(r)].size(); ++i) {
        const Spec& s = calls[static_cast<size_t>(r)][i];
        std::vector<float> in(s.count, static_cast<float>(r + 1));
        out.out.emplace_back(s.count, -7.0f);
        const CallDesc cd = descOf(s, i);
        std::string err;
        if (s.coll == coccl::Coll::Broadcast) {
          GatherArgs a =
              pl.gather(dev::Coll::Broadcast, r == s.root ? in.data() : nullptr,
                        out.out.back().data(), s.count, 4, cocclFloat32, s.root, nullptr);
          std::memcpy(&a.desc, &cd, sizeof(cd));
          const std::function<void()> body = [&] { dev::gatherKernelBody<ExactMode>(ctx, a); };
          err = d.launch(body, a.nblocks);
        } else {
          ReduceArgs a = pl.reduce(dev::Coll::AllReduce, in.data(), out.out.back().data(), s.count,
                                   4, cocclFloat32, s.op, 0, nullptr);
          std::memcpy(&a.desc, &cd, sizeof(cd));
          const std::function<void()> body = [&] { dev::reduceKernelBody<ExactMode>(ctx, a); };
          err = d.launch(body, a.nblocks);
        }
        EXPECT_EQ(err, "") << "rank " << r;
        const HostState& h = w.host[static_cast<size_t>(r)];
        out.error = h.error;
        if (h.error) {
          const CallDesc mine = callDescFromBytes(&h.mine);
          const CallDesc theirs = callDescFromBytes(&h.theirs);
          out.message = callDescPairMismatch(mine, r, theirs, h.errPeer);
          return;
        }
      }
    });
  for (auto& t : ranks) t.join();
  return res;
}

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

// ---- device Send/Recv ------------------------------------------------------------------------
struct Msg {
  int peer;
  bool send;
  size_t bytes;
};

struct P2PResult {
  uint32_t error = 0;
  std::string message;                     // p2pPairMismatch of the recorded pair descriptors
  std::vector<std::vector<uint8_t>> recv;  // per message (send: empty)
};

// Rank r runs one group of msgs[r] (send bytes: rank * 16 + message index; receive buffers
// start as 0xCD).
std::vector<P2PResult> runP2P(World& w, const std::vector<std::vector<Msg>>& msgs) {
  const int p = w.p;
  std::vector<P2PResult> res(static_cast<size_t>(p));
  std::vector<std::thread> ranks;
  for (int r = 0; r < p; ++r)
    ranks.emplace_back([&, r] {
      EmuDevice d(w.nb);
      P2PResult& out = res[static_cast<size_t>(r)];
      std::vector<std::vector<uint8_t>> sends;
      std::vector<P2PMsg> m;
      const auto& mine = msgs[static_cast<size_t>(r)];
      out.recv.resize(mine.size());
      sends.resize(mine.size());
      for (size_t i = 0; i < mine.size(); ++i) {
        void* buf;
        if (mine[i].send) {
          sends[i].assign(mine[i].bytes, static_cast<uint8_t>(r * 16 + static_cast<int>(i)));
          buf = sends[i].data();
        } else {
          out.recv[i].assign(mine[i].bytes, 0xCD);
          buf = out.recv[i].data();
        }
        m.push_back(P2PMsg{buf, mine[i].bytes, mine[i].peer, mine[i].send ? 1 : 0});
      }
      P2PArgs a;
      ASSERT_TRUE(w.planner(r).p2p(m, &a));
      const Ctx* ctx = &w.ctx[static_cast<size_t>(r)];
      const std::function<void()> body = [&] { dev::p2pKernelBody(ctx, a); };
      EXPECT_EQ(d.launch(body, a.nblocks), "") << "rank " << r;
      const HostState& h = w.host[static_cast<size_t>(r)];
      out.error = h.error;
      if (h.error == static_cast<uint32_t>(kDevMismatch)) {
        P2PPairCounts mc, tc;
        std::memcpy(&mc, &h.mine.w[dev::kPairSends], sizeof(mc));
        std::memcpy(&tc, &h.theirs.w[dev::kPairSends], sizeof(tc));
        out.message = p2pPairMismatch(mc, r, tc, h.errPeer);
      }
    });
  for (auto& t : ranks) t.join();
  return res;
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

// ---- the staged pipeline's exchanges (P2PArgs::callAgree) -----------------------------------
// One step of a rank: a fused exact AllReduce (agreeCall at its start), or a staged exchange
// (the P2P kernel, pair agreement off as IpcMover runs it) that carries the call's descriptor
// when `agree` (the call's first exchange).
struct Step {
  bool poison = false;  // the abort's poison kernel (this rank's pipeline failed)
  bool fused = false;
  Spec spec;          // the call (its descriptor); fused: also what runs
  uint64_t seq = 0;   // the call number
  bool agree = false;
  std::vector<Msg> msgs;  // exchange: this rank's group
};

struct StepsResult {
  uint32_t error = 0, from = 0;
  std::string message;
  std::vector<std::vector<std::vector<uint8_t>>> recv;  // per exchange step, per message
  std::vector<std::vector<float>> out;                  // per fused step
};

// Rank r runs steps[r] back to back, stopping at the first device error. Exchange bytes: rank *
// 16 + step; receive buffers start as 0xCD; fused inputs rank + 1, outputs start at -7.
std::vector<StepsResult> runSteps(World& w, const std::vector<std::vector<Step>>& steps) {
  const int p = w.p;
  std::vector<StepsResult> res(static_cast<size_t>(p));
  std::vector<std::thread> ranks;
  for (int r = 0; r < p; ++r)
    ranks.emplace_back([&, r] {
      EmuDevice d(w.nb);
      const Ctx* ctx = &w.ctx[static_cast<size_t>(r)];
      StepsResult& out = res[static_cast<size_t>(r)];
      const auto& mine = steps[static_cast<size_t>(r)];
      for (size_t i = 0; i < mine.size(); ++i) {
        const Step& st = mine[i];
        const CallDesc cd = descOf(st.spec, st.seq);
        std::string err;
        if (st.poison) {
          w.host[static_cast<size_t>(r)].abort = 1u;
          const std::function<void()> body = [&] { dev::poisonKernelBody(ctx); };
          err = d.launch(body, w.nb);
        } else if (st.fused) {
          std::vector<float> in(st.spec.count, static_cast<float>(r + 1));
          out.out.emplace_back(st.spec.count, -7.0f);
          ReduceArgs a = w.planner(r).reduce(dev::Coll::AllReduce, in.data(),
                                             out.out.back().data(), st.spec.count, 4,
                                             cocclFloat32, st.spec.op, 0, nullptr);
          std::memcpy(&a.desc, &cd, sizeof(cd));
          const std::function<void()> body = [&] { dev::reduceKernelBody<ExactMode>(ctx, a); };
          err = d.launch(body, a.nblocks);
        } else {
          std::vector<std::vector<uint8_t>> sends(st.msgs.size());
          out.recv.emplace_back(st.msgs.size());
          std::vector<P2PMsg> m;
          for (size_t k = 0; k < st.msgs.size(); ++k) {
            const Msg& x = st.msgs[k];
            auto& buf = x.send ? sends[k] : out.recv.back()[k];
            buf.assign(x.bytes, x.send ? static_cast<uint8_t>(r * 16 + static_cast<int>(i)) : 0xCD);
            m.push_back(P2PMsg{buf.data(), x.bytes, x.peer, x.send ? 1 : 0});
          }
          P2PArgs a;
          EXPECT_TRUE(w.planner(r).p2p(m, &a));
          a.agree = 0;
          a.callAgree = st.agree ? 1 : 0;
          std::memcpy(&a.desc, &cd, sizeof(cd));
          const std::function<void()> body = [&] { dev::p2pKernelBody(ctx, a); };
          err = d.launch(body, a.nblocks);
        }
        EXPECT_EQ(err, "") << "rank " << r;
        const HostState& h = w.host[static_cast<size_t>(r)];
        out.error = h.error;
        if (h.error == static_cast<uint32_t>(kDevMismatch)) {
          out.from = h.errFrom;
          out.message = callDescPairMismatch(callDescFromBytes(&h.mine), r,
                                             callDescFromBytes(&h.theirs), h.errPeer);
        }
        if (h.error) return;
      }
    });
  for (auto& t : ranks) t.join();
  return res;
}

// Every exchange with every peer, `bytes` each way.
std::vector<Msg> allToAll(int p, int me, size_t bytes) {
  std::vector<Msg> m;
  for (int q = 0; q < p; ++q)
    if (q != me) {
      m.push_back({q, true, bytes});
      m.push_back({q, false, bytes});
    }
  return m;
}

// runSteps, and its wall time in seconds.
std::vector<StepsResult> runStepsTimed(World& w, const std::vector<std::vector<Step>>& steps,
                                       double* secs) {
  const auto t0 = std::chrono::steady_clock::now();
  auto res = runSteps(w, steps);
  *secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

// Rank r's first exchange of a staged call: 3000 bytes each way with every peer, agreeing.
Step firstExchange(int p, int r) {
  Step s;
  s.agree = true;
  s.msgs = allToAll(p, r, 3000);
  return s;
}

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
