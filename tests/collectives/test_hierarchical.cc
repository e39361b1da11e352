// Two-level (hier:) AllReduce and ReduceScatter on host ranks (collectives/host/hierarchical.cc):
// nodes from COCCL_RANKS_PER_NODE (the config's ranksPerNode), one host acting as several. The
// output against the fp64 reference, every rank's AllReduce output bitwise identical, the wire
// bytes against the formula of hierarchical.cc, and the degenerate layouts (one node, one
// rank per node) equal to the flat algorithm with the one codec that carries traffic.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compressed_util.h"
#include "harness/harness.h"

namespace coccl::test {
namespace {

struct HierCase {
  int nranks, perNode;
  cocclDataType_t dt;
  cocclRedOp_t op;
  size_t count;  // AllReduce elements (ReduceScatter: per rank)
};

cocclConfig_t hierConfig(int perNode, const char* spec) {
  cocclConfig_t c = configWithTimeout(60000);
  c.codecAllReduce = spec;
  c.codecReduceScatter = spec;
  c.compressMinBytes = 0;
  c.ranksPerNode = perNode;
  c.chunkBytes = 1 << 16;  // several chunks per shard
  return c;
}

constexpr const char* kSpec = "hier:intra=int8,inter=fp8_ash_ds";

void runAllReduce(const HierCase& hc, const char* spec, double maxRelL2, const char* algo,
                  Mode mode = Mode::Threads) {
  RunOptions o;
  o.config = hierConfig(hc.perNode, spec);
  const size_t es = hc.dt == cocclFloat32 ? 4 : 2;
  runRanks(hc.nranks, mode, [&](Rank& r) {
    RankData in = syntheticInput(hc.dt, hc.count, r.rank, 7);
    std::vector<double> want(hc.count, 0.0);
    for (int q = 0; q < r.nranks; ++q) {
      const RankData d = q == r.rank ? in : syntheticInput(hc.dt, hc.count, q, 7);
      for (size_t i = 0; i < hc.count; ++i) want[i] += d.exact[i];
    }
    if (hc.op == cocclAvg)
      for (double& v : want) v /= r.nranks;
    std::vector<uint8_t> out(hc.count * es);
    ASSERT_EQ(cocclAllReduce(in.bytes.data(), out.data(), hc.count, hc.dt, hc.op, r.comm, nullptr),
              cocclSuccess) << cocclGetLastError(r.comm);
    cocclCollStats_t st{};
    ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
    EXPECT_STREQ(st.algorithm, algo);
    const double e = relL2(toDoubles(hc.dt, out.data(), hc.count), want);
    EXPECT_LT(e, maxRelL2) << "rank " << r.rank;
    EXPECT_GT(e, 0.0) << "exact: no codec ran";
    EXPECT_TRUE(sameOnAllRanks(r, hashBytes(out.data(), out.size()))) << "ranks disagree";
    // In place: the same bytes.
    std::vector<uint8_t> inplace = in.bytes;
    ASSERT_EQ(cocclAllReduce(inplace.data(), inplace.data(), hc.count, hc.dt, hc.op, r.comm,
                             nullptr), cocclSuccess);
    EXPECT_EQ(inplace, out) << "in place differs, rank " << r.rank;
  }, o);
}

TEST(Hierarchical, AllReduceTwoNodesOfTwo) {
  runAllReduce({4, 2, cocclFloat32, cocclSum, 100003}, kSpec, 0.04, "hierarchical");
  runAllReduce({4, 2, cocclBfloat16, cocclAvg, 65536}, kSpec, 0.04, "hierarchical");
}

// Ranks as processes (each its own UCX context and bootstrap connection, as on real nodes).
TEST(Hierarchical, AllReduceTwoNodesOfTwoProcesses) {
  runAllReduce({4, 2, cocclBfloat16, cocclSum, 30001}, kSpec, 0.04, "hierarchical",
               Mode::Processes);
}

TEST(Hierarchical, AllReduceTwoNodesOfThreeAndThreeOfTwo) {
  runAllReduce({6, 3, cocclFloat16, cocclSum, 50001}, kSpec, 0.04, "hierarchical");
  runAllReduce({6, 2, cocclFloat32, cocclAvg, 7777}, kSpec, 0.04, "hierarchical");
}

TEST(Hierarchical, OneLevelLayoutsRunFlat) {
  // one node: the intra codec, flat; one rank per node: the inter codec, flat
  runAllReduce({4, 4, cocclFloat32, cocclSum, 4096}, kSpec, 0.02, "two-shot");
  runAllReduce({4, 1, cocclFloat32, cocclSum, 4096}, kSpec, 0.06, "two-shot");
}

TEST(Hierarchical, ReduceScatterMatchesReferenceAndWireFormula) {
  const int p = 4, L = 2, N = p / L;
  const size_t recv = 40000;  // per rank; chunks of 16384 fp32 elements (64 KiB)
  RunOptions o;
  o.config = hierConfig(L, kSpec);
  runRanks(p, Mode::Threads, [&](Rank& r) {
    const size_t count = recv * static_cast<size_t>(p);
    RankData in = syntheticInput(cocclFloat32, count, r.rank, 9);
    std::vector<double> want(recv, 0.0);
    for (int q = 0; q < p; ++q) {
      const RankData d = q == r.rank ? in : syntheticInput(cocclFloat32, count, q, 9);
      for (size_t i = 0; i < recv; ++i) want[i] += d.exact[static_cast<size_t>(r.rank) * recv + i];
    }
    std::vector<float> out(recv);
    ASSERT_EQ(cocclReduceScatter(in.bytes.data(), out.data(), recv, cocclFloat32, cocclSum, r.comm,
                                 nullptr), cocclSuccess) << cocclGetLastError(r.comm);
    EXPECT_LT(relL2(toDoubles(cocclFloat32, out.data(), recv), want), 0.04);
    cocclCollStats_t st{};
    ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
    EXPECT_STREQ(st.algorithm, "hierarchical");
    EXPECT_NE(std::string(st.codec).find("hier:intra=int8"), std::string::npos) << st.codec;
    // (L-1) N intra payloads + (N-1) inter payloads of every chunk of a shard, after the
    // call's 128-byte agreement descriptor to every peer (src/collectives/call_desc.h)
    cocclCodec_t a = nullptr, b = nullptr;
    ASSERT_EQ(cocclCodecCreate("int8", &a), cocclSuccess);
    ASSERT_EQ(cocclCodecCreate("fp8_ash_ds", &b), cocclSuccess);
    size_t want8 = 128 * static_cast<size_t>(r.nranks - 1);
    const size_t chunk = 16384;
    for (size_t off = 0; off < recv; off += chunk) {
      const size_t n = std::min(chunk, recv - off);
      size_t ea = 0, eb = 0;
      ASSERT_EQ(cocclCodecEncodedBytes(a, n, cocclFloat32, &ea), cocclSuccess);
      ASSERT_EQ(cocclCodecEncodedBytes(b, n, cocclFloat32, &eb), cocclSuccess);
      want8 += static_cast<size_t>((L - 1) * N) * ea + static_cast<size_t>(N - 1) * eb;
    }
    EXPECT_EQ(st.wireBytesSent, want8);
    cocclCodecDestroy(a);
    cocclCodecDestroy(b);
  }, o);
}

TEST(Hierarchical, BadSpecsAndLayoutsFailInit) {
  for (const char* spec : {"hier:intra=int8", "hier:intra=int8,inter=nosuch",
                           "hier:intra=int8,inter=none", "hier:intra=int8,inter=int8,x=1"}) {
    RunOptions o;
    o.config = hierConfig(2, spec);
    o.initCheck = [&](int, cocclResult_t res, const std::string& msg) {
      EXPECT_EQ(res, cocclInvalidArgument) << spec;
      EXPECT_NE(msg.find("hier"), std::string::npos) << spec << ": " << msg;
    };
    runRanks(2, Mode::Threads, [](Rank&) {}, o);
  }
  RunOptions o;
  o.config = hierConfig(3, kSpec);  // 3 does not divide 4
  o.initCheck = [](int, cocclResult_t res, const std::string& msg) {
    EXPECT_EQ(res, cocclInvalidArgument);
    EXPECT_NE(msg.find("does not divide"), std::string::npos) << msg;
  };
  runRanks(4, Mode::Threads, [](Rank&) {}, o);
}

}  // namespace
}  // namespace coccl::test
