// The two-level schedule of the device path (src/collectives/staged/two_level.h) on the CPU:
// p threads, each running runTwoLevel with host operations (the host codecs, fp32 sums as the
// host path forms them) and an exchange that matches the transfers between each pair of ranks
// in the order they are posted (NCCL's grouped send/recv). Every rank's output is compared bit
// for bit with a reference written from SDP4Bit's scheme as the host path computes it
// (collectives/host/hierarchical.cc: per node the local inputs in local-rank order, the owner's
// raw; then the nodes' partial sums in node order, the owner node's exact; from -0; AllReduce
// encodes the total once and every rank decodes it), and the bytes each rank sends with the
// formula. Pipelined and one piece at a time; many pieces (small chunks, so that the pipeline
// reuses its staging sets), in place and out of place, shards of 0 elements, SUM and AVG.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "codecs/codec.h"
#include "collectives/host/reduce.h"
#include "collectives/layout.h"
#include "collectives/staged/two_level.h"
#include "two_level_reference.h"
#include "core/dtype.h"
#include "core/error.h"

namespace coccl {
namespace {

using test::Case;
using test::name;
using test::reference;

// In-order queues of messages between every pair of ranks.
class World {
 public:
  explicit World(int p) : p_(p), q_(static_cast<size_t>(p * p)) {}
  void send(int from, int to, const void* buf, size_t bytes) {
    std::lock_guard<std::mutex> lk(mu_);
    const char* b = static_cast<const char*>(buf);
    q_[idx(from, to)].emplace_back(b, b + bytes);
    cv_.notify_all();
  }
  void recv(int from, int to, void* buf, size_t bytes) {
    std::unique_lock<std::mutex> lk(mu_);
    auto& q = q_[idx(from, to)];
    if (!cv_.wait_for(lk, std::chrono::seconds(20), [&] { return !q.empty(); }))
      COCCL_THROW(cocclSystemError, "rank %d waited for rank %d", to, from);
    std::vector<char> m = std::move(q.front());
    q.pop_front();
    if (m.size() != bytes)
      COCCL_THROW(cocclInternalError, "rank %d expected %zu bytes from rank %d, got %zu", to, bytes,
                  from, m.size());
    std::memcpy(buf, m.data(), bytes);
  }
  bool drained() const {
    for (const auto& q : q_)
      if (!q.empty()) return false;
    return true;
  }

 private:
  size_t idx(int from, int to) const { return static_cast<size_t>(from * p_ + to); }
  int p_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::deque<std::vector<char>>> q_;
};

class HostOps final : public TwoLevelOps {
 public:
  HostOps(World& w, int me) : w_(w), me_(me) {}
  char* staging(size_t bytes) override {
    asked = bytes;
    buf_.assign(bytes + 256, 0);
    const uintptr_t a = reinterpret_cast<uintptr_t>(buf_.data());
    return buf_.data() + ((256 - a % 256) % 256);
  }
  void encode(const Codec& c, const void* in, cocclDataType_t dt, size_t n, void* out) override {
    c.encode(in, dt, n, out);
  }
  void decodeAccumulate(const Codec& c, const void* const* ins, int k, size_t n, cocclDataType_t dt,
                        float* acc) override {
    for (int i = 0; i < k; ++i) c.decodeAccumulate(ins[i], n, dt, acc);
  }
  void accumulate(const void* in, cocclDataType_t dt, size_t n, float* acc) override {
    accumulateToFloat(in, dt, n, acc);
  }
  void fill(float* acc, size_t n, float value) override { std::fill(acc, acc + n, value); }
  void finish(const float* acc, size_t n, float scale, cocclDataType_t dt, void* out) override {
    std::vector<float> v(acc, acc + n);
    if (scale != 1.0f) scaleFloats(v.data(), n, scale);
    convertFromFloat(v.data(), n, dt, out);
  }
  void decode(const Codec& c, const void* in, size_t n, cocclDataType_t dt, void* out) override {
    c.decode(in, n, dt, out);
  }
  void exchange(const std::vector<Xfer>& group) override {
    ++groups;
    for (const Xfer& x : group)
      if (x.send) w_.send(me_, x.peer, x.buf, x.bytes);
    for (const Xfer& x : group)
      if (!x.send) w_.recv(x.peer, me_, x.buf, x.bytes);
  }
  int groups = 0;
  size_t asked = 0;  // bytes of staging asked for

 private:
  World& w_;
  int me_;
  std::vector<char> buf_;
};

void runCase(const Case& c, bool pipelined) {
  SCOPED_TRACE(name(c) + (pipelined ? " pipelined" : " one piece at a time"));
  const CodecPtr intra = makeCodec(c.intra), inter = makeCodec(c.inter);
  const size_t es = dtypeSize(c.dt), chunkBytes = 4096;
  const size_t inCount = c.allReduce ? c.count : c.count * static_cast<size_t>(c.p);
  std::vector<std::vector<char>> in(static_cast<size_t>(c.p), std::vector<char>(inCount * es));
  std::mt19937 rng(static_cast<unsigned>(c.count * 31 + c.p));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(inCount);
  for (int r = 0; r < c.p; ++r) {
    // Outlier channels, and -0 on every rank at some elements (their sum is -0 from -0 only).
    for (size_t i = 0; i < inCount; ++i)
      v[i] = i % 101 == 7 ? -0.0f : (i % 97 == 5 ? 20.0f : 1.0f) * nd(rng) + 0.1f * r;
    convertFromFloat(v.data(), inCount, c.dt, in[static_cast<size_t>(r)].data());
  }
  std::vector<size_t> wantWire;
  const auto want = reference(c, *intra, *inter, in, chunkBytes, &wantWire);

  World world(c.p);
  std::vector<std::vector<char>> bufs = in, outs(static_cast<size_t>(c.p));
  std::vector<size_t> wire(static_cast<size_t>(c.p), 0);
  std::vector<std::string> errors(static_cast<size_t>(c.p));
  std::vector<std::thread> threads;
  for (int r = 0; r < c.p; ++r)
    threads.emplace_back([&, r] {
      try {
        HostOps ops(world, r);
        TwoLevelCall call;
        call.allReduce = c.allReduce;
        call.count = c.count;
        call.dt = c.dt;
        call.op = c.op;
        call.intra = intra.get();
        call.inter = inter.get();
        std::vector<char>& b = bufs[static_cast<size_t>(r)];
        std::vector<char>& o = outs[static_cast<size_t>(r)];
        o.assign(c.count * es, 0x5A);
        call.in = b.data();
        // In place: AllReduce out = in; ReduceScatter out = in + rank * count.
        call.out = !c.inPlace    ? o.data()
                   : c.allReduce ? b.data()
                                 : b.data() + static_cast<size_t>(r) * c.count * es;
        TwoLevelShape sh;
        sh.nranks = c.p;
        sh.rank = r;
        sh.ranksPerNode = c.L;
        sh.chunkBytes = chunkBytes;
        sh.pipelined = pipelined;
        wire[static_cast<size_t>(r)] = runTwoLevel(call, sh, ops);
        if (ops.asked != twoLevelStagingBytes(call, sh))
          throw std::runtime_error("staging asked for differs from twoLevelStagingBytes");
        if (c.inPlace)
          o.assign(static_cast<char*>(call.out), static_cast<char*>(call.out) + c.count * es);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < c.p; ++r) ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  EXPECT_TRUE(world.drained());
  for (int r = 0; r < c.p; ++r) {
    EXPECT_EQ(wire[static_cast<size_t>(r)], wantWire[static_cast<size_t>(r)]) << "rank " << r;
    const auto& got = outs[static_cast<size_t>(r)];
    const auto& ref = want[static_cast<size_t>(r)];
    for (size_t i = 0; i < c.count; ++i)
      ASSERT_EQ(std::memcmp(got.data() + i * es, ref.data() + i * es, es), 0)
          << "rank " << r << " element " << i;
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  struct Layout {
    int p, L;
    const char* intra;
    const char* inter;
  };
  const Layout layouts[] = {{4, 2, "int8", "int8:block=256"},
                            {6, 2, "int8:block=32", "int8"},
                            {6, 3, "fp8_ash_ds", "int8:block=64"},
                            {8, 4, "int8", "int8"}};
  for (const Layout& x : layouts)
    for (bool ar : {true, false})
      for (cocclDataType_t dt : {cocclFloat32, cocclBfloat16, cocclFloat16}) {
        v.push_back({x.p, x.L, x.intra, x.inter, ar, dt, cocclSum, ar ? 300u : 130u, false});
        v.push_back({x.p, x.L, x.intra, x.inter, ar, dt, cocclSum, ar ? 50003u : 9001u, false});
        v.push_back({x.p, x.L, x.intra, x.inter, ar, dt, cocclAvg, ar ? 20011u : 4099u, true});
      }
  return v;
}

TEST(TwoLevelSchedule, PipelinedMatchesTheReferenceBitwise) {
  for (const Case& c : cases()) runCase(c, true);
}

TEST(TwoLevelSchedule, OnePieceAtATimeMatchesTheReferenceBitwise) {
  for (const Case& c : cases()) runCase(c, false);
}

TEST(TwoLevelSchedule, PipelinedUsesFewerGroups) {
  // K pieces: one group a step, K + E - 1 steps, against K x E groups one piece at a time.
  const CodecPtr intra = makeCodec("int8"), inter = makeCodec("int8");
  const int p = 4;
  const size_t count = 40000;  // fp32, 4096-byte chunks of 1024 elements: 10 pieces a shard
  std::vector<std::vector<char>> in(p, std::vector<char>(count * 4, 0)), out = in;
  for (bool pipelined : {true, false}) {
    World world(p);
    std::vector<int> groups(p);
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
      threads.emplace_back([&, r] {
        HostOps ops(world, r);
        TwoLevelCall call;
        call.in = in[static_cast<size_t>(r)].data();
        call.out = out[static_cast<size_t>(r)].data();
        call.count = count;
        call.intra = intra.get();
        call.inter = inter.get();
        TwoLevelShape sh{p, r, 2, 4096, pipelined};
        runTwoLevel(call, sh, ops);
        groups[static_cast<size_t>(r)] = ops.groups;
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(groups[0], pipelined ? 10 + 4 - 1 : 10 * 4);
  }
}

TEST(TwoLevelSchedule, OneLevelLayoutsAreRefused) {
  const CodecPtr c = makeCodec("int8");
  World world(4);
  HostOps ops(world, 0);
  TwoLevelCall call;
  std::vector<float> buf(16);
  call.in = buf.data();
  call.out = buf.data();
  call.count = 16;
  call.intra = c.get();
  call.inter = c.get();
  for (int L : {1, 3, 4}) {
    TwoLevelShape sh{4, 0, L, 4096, true};
    EXPECT_THROW(runTwoLevel(call, sh, ops), Error) << L;
  }
}

}  // namespace
}  // namespace coccl
