// The policy file on host ranks through the public API (src/collectives/policy_init.cc): the
// members' world ranks exchanged at init (cocclConfig_t.worldRank, cocclCommWorldRanks), rules
// on name, size and members changing which codec a call uses (cocclCommGetLastCollStats and
// cocclCommQueryCodec), a bad file or ranks that resolve different policies failing init on
// every rank with the file and line, and the resolved policy printed once, on rank 0
// (COCCL_DEBUG=INFO).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "harness/harness.h"

using namespace coccl::test;

namespace {

// A policy file that lives as long as the test.
struct TempPolicy {
  std::string path;
  explicit TempPolicy(const std::string& text) {
    char p[] = "/tmp/coccl_policy_XXXXXX";
    const int fd = mkstemp(p);
    EXPECT_GE(fd, 0);
    close(fd);
    path = p;
    std::ofstream(path) << text;
  }
  ~TempPolicy() { unlink(path.c_str()); }
};

const char* k3d = R"({"rules": [
  {"name": "tp*", "collective": "allreduce", "codec": "fp8_ash_ds"},
  {"stride": 2, "collective": ["allreduce", "reducescatter"], "codec": "int8", "min_bytes": 0},
  {"members": [10, 11], "collective": "sendrecv", "codec": "int8"}
]})";

std::string lastCodec(cocclComm_t comm) {
  cocclCollStats_t s{};
  EXPECT_EQ(cocclCommGetLastCollStats(comm, &s), cocclSuccess);
  return s.codec ? s.codec : "";
}

std::string allReduceCodec(cocclComm_t comm, size_t count) {
  std::vector<float> x(count, 1.f);
  EXPECT_EQ(cocclAllReduce(x.data(), x.data(), count, cocclFloat32, cocclSum, comm, nullptr),
            cocclSuccess) << cocclGetLastError(comm);
  char q[256] = "";
  int on = -1;
  EXPECT_EQ(cocclCommQueryCodec(comm, cocclCollAllReduce, count, cocclFloat32, cocclSum, &on, q,
                                sizeof(q)), cocclSuccess);
  const std::string got = lastCodec(comm);
  EXPECT_EQ(on, got != "none");
  EXPECT_EQ(std::string(q).rfind(got, 0), 0u) << q << " vs " << got;  // spec vs name
  return got;
}

}  // namespace

// World ranks 10 + 2r on ranks r of a 2-rank communicator: stride 2, members {10, 12}.
TEST(PolicyRanks, WorldRanksNameAndMembersChooseTheCodec) {
  TempPolicy file(k3d);
  RunOptions o;
  o.config = configWithTimeout(30000);
  o.config.policy = file.path.c_str();
  o.configure = [](int r, cocclConfig_t* c) { c->worldRank = 10 + 2 * r; };
  runRanks(2, Mode::Threads, [](Rank& r) {
    int w[2] = {-1, -1};
    ASSERT_EQ(cocclCommWorldRanks(r.comm, w, 2), cocclSuccess);
    EXPECT_EQ(w[0], 10);
    EXPECT_EQ(w[1], 12);
    EXPECT_EQ(cocclCommWorldRanks(r.comm, w, 3), cocclInvalidArgument);
    // No name: rule 2 (stride 2, min_bytes 0) compresses even 4 KiB with int8.
    EXPECT_EQ(allReduceCodec(r.comm, 1024), "int8");
    // Send/Recv: members are {10, 12}, not {10, 11}: exact.
    int on = -1;
    EXPECT_EQ(cocclCommQueryCodec(r.comm, cocclCollSendRecv, 1 << 16, cocclFloat32, cocclSum, &on,
                                  nullptr, 0), cocclSuccess);
    EXPECT_EQ(on, 0);
  }, o);
  // Named tp0: rule 1 (fp8_ash_ds, the default threshold 64 KiB).
  o.config.commName = "tp0";
  runRanks(2, Mode::Threads, [](Rank& r) {
    EXPECT_EQ(allReduceCodec(r.comm, 1 << 16), "fp8_ash_ds");
    EXPECT_EQ(allReduceCodec(r.comm, 1024), "none");
  }, o);
  // World ranks 10, 11: Send/Recv compressed by rule 3; AllReduce: no rule, the default (none).
  o.config.commName = nullptr;
  o.configure = [](int r, cocclConfig_t* c) { c->worldRank = 10 + r; };
  runRanks(2, Mode::Threads, [](Rank& r) {
    EXPECT_EQ(allReduceCodec(r.comm, 1 << 16), "none");
    std::vector<float> x(1 << 16, 1.f + r.rank);
    const cocclResult_t res =
        r.rank == 0 ? cocclSend(x.data(), x.size(), cocclFloat32, 1, r.comm, nullptr)
                    : cocclRecv(x.data(), x.size(), cocclFloat32, 0, r.comm, nullptr);
    ASSERT_EQ(res, cocclSuccess) << cocclGetLastError(r.comm);
    EXPECT_EQ(lastCodec(r.comm), "int8");  // both ends: the message's codec
    if (r.rank == 1) {
      EXPECT_NEAR(x[5], 1.f, 0.02f);
    }
  }, o);
}

// Every rank fails init, with cocclInvalidArgument naming the file and the line.
// "warmup_calls" (TAH-Quant's uncompressed warm-up): the calls a rule decides run exact while
// their number is below N, then compressed. Collectives count the communicator's collectives
// (an AllGather in between counts); Send/Recv the messages of the pair in their direction, so
// both ends switch together (a header mismatch would fail them otherwise). The query answers for
// calls after the warm-up.
TEST(PolicyRanks, WarmupCallsRunExactFirst) {
  TempPolicy file(R"({"rules": [
    {"collective": "allreduce", "codec": "int8", "min_bytes": 0, "warmup_calls": 3},
    {"collective": "sendrecv", "codec": "int8", "min_bytes": 0, "warmup_calls": 2}
  ]})");
  RunOptions o;
  o.config = configWithTimeout(30000);
  o.config.policy = file.path.c_str();
  runRanks(2, Mode::Threads, [](Rank& r) {
    auto allReduce = [&r] {
      std::vector<float> x(4096, 1.f);
      EXPECT_EQ(cocclAllReduce(x.data(), x.data(), x.size(), cocclFloat32, cocclSum, r.comm,
                               nullptr),
                cocclSuccess);
      return lastCodec(r.comm);
    };
    EXPECT_EQ(allReduce(), "none");  // call 0
    EXPECT_EQ(allReduce(), "none");  // call 1
    std::vector<float> g(8, 1.f), all(16);
    ASSERT_EQ(cocclAllGather(g.data(), all.data(), 8, cocclFloat32, r.comm, nullptr), cocclSuccess);
    EXPECT_EQ(allReduce(), "int8");  // call 3
    EXPECT_EQ(allReduceCodec(r.comm, 4096), "int8");  // and the query agrees from here
    // Send/Recv both ways: each direction its own count.
    std::vector<float> a(4096, 1.f + r.rank), b(4096);
    for (int m = 0; m < 3; ++m) {
      ASSERT_EQ(cocclGroupStart(), cocclSuccess);
      EXPECT_EQ(cocclSend(a.data(), a.size(), cocclFloat32, 1 - r.rank, r.comm, nullptr), cocclSuccess);
      EXPECT_EQ(cocclRecv(b.data(), b.size(), cocclFloat32, 1 - r.rank, r.comm, nullptr), cocclSuccess);
      ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
      EXPECT_EQ(lastCodec(r.comm), m < 2 ? "none" : "int8") << "message " << m;
      if (m < 2) {
        EXPECT_EQ(b[7], 2.f - r.rank);  // exact
      } else {
        EXPECT_NEAR(b[7], 2.f - r.rank, 0.02f);
      }
    }
  }, o);
}

// "direction": "up" compresses a pipeline's activations (to the next, higher rank) and leaves
// the gradients coming back exact; both ends of each message decide alike. The query says
// compressed (the NCCL shim then routes both directions to coccl), though the first sendrecv
// rule, for the messages down, is exact.
TEST(PolicyRanks, DirectionUpCompressesOneWay) {
  TempPolicy file(R"({"rules": [
    {"collective": "sendrecv", "direction": "down", "codec": "none"},
    {"collective": "sendrecv", "direction": "up", "codec": "int8", "min_bytes": 0}
  ]})");
  RunOptions o;
  o.config = configWithTimeout(30000);
  o.config.policy = file.path.c_str();
  runRanks(2, Mode::Threads, [](Rank& r) {
    std::vector<float> a(4096), b(4096, 0.f), want(4096);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = std::sin(0.37f * i) * (1.f + r.rank);
      want[i] = std::sin(0.37f * i) * (2.f - r.rank);
    }
    int compressed = 0;
    char name[64];
    ASSERT_EQ(cocclCommQueryCodec(r.comm, cocclCollSendRecv, a.size(), cocclFloat32, cocclSum,
                                  &compressed, name, sizeof(name)),
              cocclSuccess);
    EXPECT_EQ(compressed, 1);
    EXPECT_EQ(std::string(name).substr(0, 4), "int8");
    ASSERT_EQ(cocclGroupStart(), cocclSuccess);
    EXPECT_EQ(cocclSend(a.data(), a.size(), cocclFloat32, 1 - r.rank, r.comm, nullptr), cocclSuccess);
    EXPECT_EQ(cocclRecv(b.data(), b.size(), cocclFloat32, 1 - r.rank, r.comm, nullptr), cocclSuccess);
    ASSERT_EQ(cocclGroupEnd(), cocclSuccess) << cocclGetLastError(r.comm);
    if (r.rank == 0) {
      EXPECT_EQ(b, want);  // from rank 1: down, exact
    } else {
      EXPECT_NE(b, want);  // from rank 0: up, through int8
      for (size_t i = 0; i < b.size(); ++i) ASSERT_NEAR(b[i], want[i], 0.02f) << i;
    }
  }, o);
}

TEST(PolicyRanks, BadFileFailsInitOnEveryRank) {
  TempPolicy file("{\"rules\": [\n  {\"collective\": \"allreduce\",\n   \"codec\": \"int8:blok=3\"}\n]}\n");
  RunOptions o;
  o.config = configWithTimeout(30000);
  o.config.policy = file.path.c_str();
  std::mutex m;
  std::vector<std::string> errs(3);
  o.initCheck = [&](int rank, cocclResult_t res, const std::string& e) {
    EXPECT_EQ(res, cocclInvalidArgument) << e;
    std::lock_guard<std::mutex> l(m);
    errs[static_cast<size_t>(rank)] = e;
  };
  runRanks(3, Mode::Threads, [](Rank&) { ADD_FAILURE() << "init succeeded"; }, o);
  for (const std::string& e : errs)
    EXPECT_NE(e.find("policy file '" + file.path + "' line 3: codec spec"), std::string::npos) << e;
}

// A file only one rank can read fails every rank (the reason names that rank).
TEST(PolicyRanks, FileMissingOnOneRankFailsEveryRank) {
  TempPolicy file(k3d);
  RunOptions o;
  o.config = configWithTimeout(30000);
  o.configure = [&](int r, cocclConfig_t* c) {
    c->policy = r == 1 ? "/nonexistent/policy.json" : file.path.c_str();
  };
  o.initCheck = [&](int, cocclResult_t res, const std::string& e) {
    EXPECT_EQ(res, cocclInvalidArgument) << e;
    EXPECT_NE(e.find("rank 1: policy file '/nonexistent/policy.json': cannot read it"),
              std::string::npos) << e;
  };
  runRanks(2, Mode::Threads, [](Rank&) { ADD_FAILURE() << "init succeeded"; }, o);
}

// Files that parse but resolve differently (another codec on rank 2) fail every rank, naming
// the rule that differs.
TEST(PolicyRanks, RanksWithDifferentPoliciesFailEveryRank) {
  TempPolicy a(R"({"rules": [{"collective": "allreduce", "codec": "int8"}]})");
  TempPolicy b(R"({"rules": [{"collective": "allreduce", "codec": "fp8_ash_ds"}]})");
  RunOptions o;
  o.config = configWithTimeout(30000);
  o.configure = [&](int r, cocclConfig_t* c) { c->policy = (r == 2 ? b : a).path.c_str(); };
  o.initCheck = [&](int, cocclResult_t res, const std::string& e) {
    EXPECT_EQ(res, cocclInvalidArgument) << e;
    EXPECT_NE(e.find("the ranks resolved different policies"), std::string::npos) << e;
    EXPECT_NE(e.find("on rank 2"), std::string::npos) << e;
    EXPECT_NE(e.find("fp8_ash_ds"), std::string::npos) << e;
  };
  runRanks(3, Mode::Threads, [](Rank&) { ADD_FAILURE() << "init succeeded"; }, o);
  // A different communicator name that changes which rules apply: the same.
  TempPolicy n(R"({"rules": [{"name": "tp", "codec": "int8"}]})");
  o.configure = [&](int r, cocclConfig_t* c) {
    c->policy = n.path.c_str();
    c->commName = r == 0 ? "tp" : "dp";
  };
  o.initCheck = [&](int, cocclResult_t res, const std::string& e) {
    EXPECT_EQ(res, cocclInvalidArgument) << e;
    EXPECT_NE(e.find("the ranks resolved different policies"), std::string::npos) << e;
  };
  runRanks(2, Mode::Threads, [](Rank&) { ADD_FAILURE() << "init succeeded"; }, o);
}

// Threads that share one world rank cannot be told apart by members: a clear error.
TEST(PolicyRanks, RepeatedWorldRanksWithAMembersRule) {
  TempPolicy file(k3d);
  RunOptions o;
  o.config = configWithTimeout(30000);
  o.config.policy = file.path.c_str();
  o.config.worldRank = 7;
  o.initCheck = [&](int, cocclResult_t res, const std::string& e) {
    EXPECT_EQ(res, cocclInvalidArgument) << e;
    EXPECT_NE(e.find("world rank 7 belongs to more than one rank"), std::string::npos) << e;
  };
  runRanks(2, Mode::Threads, [](Rank&) { ADD_FAILURE() << "init succeeded"; }, o);
}

// COCCL_DEBUG=INFO: rank 0 of each communicator logs its resolved policy once; other ranks
// do not. COCCL_POLICY from the environment.
TEST(PolicyRanks, DebugPrintsTheResolvedPolicyOnRankZero) {
  TempPolicy file(k3d);
  const std::string logBase = file.path + ".log";
  runProcessRanks(
      2,
      [&](int r) {
        setenv("COCCL_DEBUG", "INFO", 1);
        setenv("COCCL_DEBUG_SUBSYS", "INIT", 1);
        setenv("COCCL_DEBUG_FILE", (logBase + std::to_string(r)).c_str(), 1);
        setenv("COCCL_POLICY", file.path.c_str(), 1);
        setenv("COCCL_CODEC", "int8", 1);
      },
      [](Rank& r) { EXPECT_EQ(allReduceCodec(r.comm, 1 << 16), "int8"); });
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string r0 = slurp(logBase + "0"), r1 = slurp(logBase + "1");
  unlink((logBase + "0").c_str());
  unlink((logBase + "1").c_str());
  EXPECT_NE(r0.find("codec policy of 2 ranks (world ranks 0,1) from " + file.path), std::string::npos) << r0;
  // No name, world ranks 0 and 1 (stride 1): no file rule applies; the default follows.
  EXPECT_NE(r0.find("policy 1. default: allreduce: int8:block=128,rotate=auto from 64K"), std::string::npos) << r0;
  EXPECT_NE(r0.find("policy 4. default: sendrecv: none"), std::string::npos) << r0;
  size_t n = 0;
  for (size_t p = r0.find("codec policy of"); p != std::string::npos; p = r0.find("codec policy of", p + 1)) ++n;
  EXPECT_EQ(n, 1u) << r0;
  EXPECT_EQ(r1.find("codec policy"), std::string::npos) << r1;
}
