// The agreement tests' runs (agree_runs.h) on the CPU emulator.
#include "agree_runs.h"

#include <cuda_runtime.h>  // emu/cuda_runtime.h
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "collectives/cuda_ipc/kernels.cuh"
#include "collectives/p2p_header.h"
#include "emu_device.h"

namespace agree_emu {

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

namespace {
// f(r) for every rank r of p, each on its own thread (a rank's kernels wait for its peers).
void onEveryRank(int p, const std::function<void(int)>& f) {
  std::vector<std::thread> ranks;
  for (int r = 0; r < p; ++r) ranks.emplace_back(f, r);
  for (auto& t : ranks) t.join();
}
}  // namespace

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

std::vector<Result> runCalls(World& w, const std::vector<std::vector<Spec>>& calls) {
  const int p = w.p;
  std::vector<Result> res(static_cast<size_t>(p));
  onEveryRank(p, [&](int r) {
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
        GatherArgs a = pl.gather(dev::Coll::Broadcast, r == s.root ? in.data() : nullptr,
                                 out.out.back().data(), s.count, 4, cocclFloat32, s.root, nullptr);
        std::memcpy(&a.desc, &cd, sizeof(cd));
        const std::function<void()> body = [&] { dev::gatherKernelBody<ExactMode>(ctx, a); };
        err = d.launch(body, a.nblocks);
      } else {
        ReduceArgs a = pl.reduce(dev::Coll::AllReduce, in.data(), out.out.back().data(), s.count, 4,
                                 cocclFloat32, s.op, 0, nullptr);
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
  return res;
}

std::vector<P2PResult> runP2P(World& w, const std::vector<std::vector<Msg>>& msgs) {
  const int p = w.p;
  std::vector<P2PResult> res(static_cast<size_t>(p));
  onEveryRank(p, [&](int r) {
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
  return res;
}

std::vector<StepsResult> runSteps(World& w, const std::vector<std::vector<Step>>& steps) {
  const int p = w.p;
  std::vector<StepsResult> res(static_cast<size_t>(p));
  onEveryRank(p, [&](int r) {
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
        ReduceArgs a = w.planner(r).reduce(dev::Coll::AllReduce, in.data(), out.out.back().data(),
                                           st.spec.count, 4, cocclFloat32, st.spec.op, 0, nullptr);
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

}  // namespace agree_emu
