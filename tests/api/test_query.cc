// cocclCommQueryCodec (the communicator's own codec policy, as the collectives apply it) and
// cocclGetEnvValue (coccl's environment rows), including bad arguments.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coccl.h"
#include "harness/harness.h"

using namespace coccl::test;

namespace {

std::string lastError() { return cocclGetLastError(nullptr); }

struct Answer {
  cocclResult_t r;
  int compressed;
  std::string codec;
};

Answer query(cocclComm_t comm, cocclCollKind_t coll, size_t count, cocclDataType_t dt,
             cocclRedOp_t op) {
  Answer a{cocclSuccess, -1, ""};
  char name[128] = "?";
  a.r = cocclCommQueryCodec(comm, coll, count, dt, op, &a.compressed, name, sizeof(name));
  a.codec = name;
  return a;
}

// A policy file with `text` under /tmp (the caller unlinks it); "" if it cannot be written.
std::string writePolicy(const std::string& text) {
  char path[] = "/tmp/coccl_query_policy_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "";
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok) unlink(path);
  return ok ? path : "";
}

RunOptions policy(const char* codec, long long minBytes) {
  RunOptions o;
  o.config = configWithTimeout(30000);
  o.config.codec = codec;
  o.config.codecReduceScatter = "none";
  o.config.compressMinBytes = minBytes;
  return o;
}

TEST(QueryCodec, AnswersWithTheCommunicatorsPolicy) {
  runRanks(2, Mode::Threads, [](Rank& r) {
    // AllReduce: count x size = 1024 x 4 reaches the 4 KiB threshold.
    Answer a = query(r.comm, cocclCollAllReduce, 1024, cocclFloat32, cocclSum);
    ASSERT_EQ(a.r, cocclSuccess) << lastError();
    EXPECT_EQ(a.compressed, 1);
    EXPECT_EQ(a.codec.rfind("int8", 0), 0u) << a.codec;  // the canonical spec
    EXPECT_EQ(query(r.comm, cocclCollAllReduce, 1023, cocclFloat32, cocclSum).compressed, 0);
    EXPECT_EQ(query(r.comm, cocclCollAllReduce, 1023, cocclFloat32, cocclSum).codec, "none");
    EXPECT_EQ(query(r.comm, cocclCollAllReduce, 4096, cocclBfloat16, cocclAvg).compressed, 1);
    // Not compressible: op, type, count 0.
    EXPECT_EQ(query(r.comm, cocclCollAllReduce, 4096, cocclFloat32, cocclMax).compressed, 0);
    EXPECT_EQ(query(r.comm, cocclCollAllReduce, 4096, cocclInt32, cocclSum).compressed, 0);
    EXPECT_EQ(query(r.comm, cocclCollAllReduce, 4096, cocclFloat64, cocclSum).compressed, 0);
    EXPECT_EQ(query(r.comm, cocclCollAllReduce, 0, cocclFloat32, cocclSum).compressed, 0);
    // AllGather counts all ranks' blocks (512 x 4 x 2 ranks = 4 KiB) and ignores the op.
    EXPECT_EQ(query(r.comm, cocclCollAllGather, 512, cocclFloat32, cocclMax).compressed, 1);
    EXPECT_EQ(query(r.comm, cocclCollAllGather, 511, cocclFloat32, cocclSum).compressed, 0);
    EXPECT_EQ(query(r.comm, cocclCollAllGather, 512, cocclFloat32,
                    static_cast<cocclRedOp_t>(99)).compressed, 1);
    // ReduceScatter's own codec is "none".
    EXPECT_EQ(query(r.comm, cocclCollReduceScatter, 4096, cocclFloat32, cocclSum).compressed, 0);
    // The name is optional.
    int on = -1;
    EXPECT_EQ(cocclCommQueryCodec(r.comm, cocclCollAllReduce, 4096, cocclFloat16, cocclSum, &on,
                                  nullptr, 0),
              cocclSuccess);
    EXPECT_EQ(on, 1);
  }, policy("int8", 4096));
}

TEST(QueryCodec, MatchesWhatTheCollectiveDoes) {
  runRanks(2, Mode::Threads, [](Rank& r) {
    for (size_t count : {size_t{100}, size_t{5000}}) {
      std::vector<float> in(count, 1.0f), out(count);
      Answer a = query(r.comm, cocclCollAllReduce, count, cocclFloat32, cocclSum);
      ASSERT_EQ(a.r, cocclSuccess);
      ASSERT_EQ(cocclAllReduce(in.data(), out.data(), count, cocclFloat32, cocclSum, r.comm,
                               nullptr),
                cocclSuccess);
      cocclCollStats_t st;
      ASSERT_EQ(cocclCommGetLastCollStats(r.comm, &st), cocclSuccess);
      EXPECT_EQ(a.compressed, std::string(st.codec) != "none") << count;
    }
  }, policy("int8", 16384));
}

// cocclCommQueryExactPath: the deciding rule's "exact", cocclExactDefault where no rule says,
// for compressed calls, count 0 and Send/Recv; bad arguments as cocclCommQueryCodec.
TEST(QueryExactPath, AnswersWithTheDecidingRule) {
  const std::string path = writePolicy(R"({"rules": [
    {"collective": "allreduce", "bytes": {"below": "64K"}, "codec": "none", "exact": "coccl"},
    {"collective": "allreduce", "codec": "int8", "min_bytes": "1M", "exact": "nccl"}]})");
  ASSERT_FALSE(path.empty());
  RunOptions o = policy("none", 0);
  o.config.policy = path.c_str();
  runRanks(
      2, Mode::Threads,
      [](Rank& r) {
        auto ask = [&](cocclCollKind_t k, size_t count, cocclRedOp_t op = cocclSum) {
          cocclExactPath_t e = static_cast<cocclExactPath_t>(-1);
          EXPECT_EQ(cocclCommQueryExactPath(r.comm, k, count, cocclFloat32, op, &e), cocclSuccess)
              << lastError();
          return e;
        };
        EXPECT_EQ(ask(cocclCollAllReduce, 16), cocclExactCoccl);
        EXPECT_EQ(ask(cocclCollAllReduce, 65536 / 4), cocclExactNccl);   // below int8's 1M
        EXPECT_EQ(ask(cocclCollAllReduce, 1 << 20), cocclExactDefault);  // compressed
        EXPECT_EQ(ask(cocclCollAllReduce, 1 << 20, cocclMax), cocclExactNccl);
        EXPECT_EQ(ask(cocclCollAllReduce, 0), cocclExactDefault);
        EXPECT_EQ(ask(cocclCollAllGather, 16), cocclExactDefault);  // the default rule
        EXPECT_EQ(ask(cocclCollSendRecv, 16), cocclExactDefault);
        // The last error without a communicator is the process's: one thread asks (the other
        // rank's thread would overwrite it between the call and the read).
        if (r.rank != 0) return;
        cocclExactPath_t e;
        EXPECT_EQ(
            cocclCommQueryExactPath(r.comm, cocclCollAllReduce, 1, cocclFloat32, cocclSum, nullptr),
            cocclInvalidArgument);
        EXPECT_NE(lastError().find("NULL"), std::string::npos);
        EXPECT_EQ(cocclCommQueryExactPath(r.comm, cocclCollAllReduce, 1,
                                          static_cast<cocclDataType_t>(12), cocclSum, &e),
                  cocclInvalidArgument);
        EXPECT_NE(lastError().find("data type 12"), std::string::npos);
      },
      o);
  unlink(path.c_str());
}

// cocclCommQueryAllGatherDelta: 1 where a "delta" rule compresses the AllGather, else 0; bad
// arguments as cocclCommQueryCodec.
TEST(QueryAllGatherDelta, AnswersWithTheDecidingRule) {
  const std::string path = writePolicy(R"({"rules": [
    {"collective": "allgather", "dtype": "float", "codec": "int8", "min_bytes": "1M",
     "delta": true}]})");
  ASSERT_FALSE(path.empty());
  RunOptions o = policy("int8", 0);
  o.config.policy = path.c_str();
  runRanks(
      2, Mode::Threads,
      [](Rank& r) {
        auto ask = [&](size_t count, cocclDataType_t dt = cocclFloat32) {
          int d = -1;
          EXPECT_EQ(cocclCommQueryAllGatherDelta(r.comm, count, dt, &d), cocclSuccess)
              << lastError();
          return d;
        };
        EXPECT_EQ(ask(1 << 18), 1);                 // 2 ranks x 1 MiB
        EXPECT_EQ(ask(1 << 16), 0);                 // below the rule's min_bytes
        EXPECT_EQ(ask(0), 0);
        EXPECT_EQ(ask(1 << 18, cocclBfloat16), 0);  // the default rule: int8, no delta
        if (r.rank != 0) return;
        EXPECT_EQ(cocclCommQueryAllGatherDelta(r.comm, 1, cocclFloat32, nullptr),
                  cocclInvalidArgument);
        EXPECT_NE(lastError().find("NULL"), std::string::npos);
        int d = 0;
        EXPECT_EQ(cocclCommQueryAllGatherDelta(r.comm, 1, static_cast<cocclDataType_t>(12), &d),
                  cocclInvalidArgument);
        EXPECT_NE(lastError().find("data type 12"), std::string::npos);
      },
      o);
  unlink(path.c_str());
}

TEST(QueryCodec, BadArguments) {
  runRanks(1, Mode::Threads, [](Rank& r) {
    int on = 0;
    char name[64];
    auto bad = [&](cocclResult_t got, const char* says) {
      EXPECT_EQ(got, cocclInvalidArgument) << says;
      EXPECT_NE(lastError().find(says), std::string::npos) << lastError();
    };
    bad(cocclCommQueryCodec(nullptr, cocclCollAllReduce, 1, cocclFloat32, cocclSum, &on, name,
                            sizeof(name)),
        "NULL");
    bad(cocclCommQueryCodec(r.comm, cocclCollAllReduce, 1, cocclFloat32, cocclSum, nullptr, name,
                            sizeof(name)),
        "NULL");
    bad(cocclCommQueryCodec(r.comm, static_cast<cocclCollKind_t>(cocclNumCollKinds), 1,
                            cocclFloat32, cocclSum, &on, name, sizeof(name)),
        "collective kind 4");
    bad(cocclCommQueryCodec(r.comm, cocclCollAllReduce, 1, static_cast<cocclDataType_t>(12),
                            cocclSum, &on, name, sizeof(name)),
        "data type 12");
    bad(cocclCommQueryCodec(r.comm, cocclCollAllReduce, 1, cocclFloat32,
                            static_cast<cocclRedOp_t>(-1), &on, name, sizeof(name)),
        "reduction op -1");
    bad(cocclCommQueryCodec(r.comm, cocclCollAllReduce, SIZE_MAX / 2, cocclFloat32, cocclSum,
                            &on, name, sizeof(name)),
        "overflows");
    bad(cocclCommQueryCodec(r.comm, cocclCollAllReduce, 1, cocclFloat32, cocclSum, &on, name, 4),
        "needs 5 bytes");  // "none" and its NUL
  });
}

TEST(GetEnvValue, ValuesAndDefaults) {
  char v[64];
  int set = -1;
  ASSERT_EQ(cocclGetEnvValue("COCCL_RING_MIN_RANKS", v, sizeof(v), &set), cocclSuccess);
  if (!set) {
    EXPECT_STREQ(v, "16");
  }
  ASSERT_EQ(cocclGetEnvValue("COCCL_TIMEOUT_MS", v, sizeof(v), nullptr), cocclSuccess);
  EXPECT_GT(std::atoll(v), 0);
  ASSERT_EQ(cocclGetEnvValue("COCCL_ALGO", v, sizeof(v), &set), cocclSuccess);
  if (!set) {
    EXPECT_STREQ(v, "auto");
  }
}

TEST(GetEnvValue, BadArguments) {
  char v[64];
  EXPECT_EQ(cocclGetEnvValue(nullptr, v, sizeof(v), nullptr), cocclInvalidArgument);
  EXPECT_NE(lastError().find("NULL"), std::string::npos);
  EXPECT_EQ(cocclGetEnvValue("COCCL_ALGO", nullptr, 8, nullptr), cocclInvalidArgument);
  EXPECT_EQ(cocclGetEnvValue("NCCL_DEBUG", v, sizeof(v), nullptr), cocclInvalidArgument);
  EXPECT_NE(lastError().find("NCCL_DEBUG is not a variable coccl reads"), std::string::npos)
      << lastError();
  EXPECT_EQ(cocclGetEnvValue("COCCL_TIMEOUT_MS", v, 2, nullptr), cocclInvalidArgument);
  EXPECT_NE(lastError().find("needs"), std::string::npos) << lastError();
}

}  // namespace

namespace {
// COCCL_CODEC / config codecs of blanks only mean what "" means: uncompressed, not an error;
// also where the AllGather entry is unset, which made the default rule read the blank codec as
// a spec ("missing codec name" at init). The environment's form: ctest perf_blank_codec_env.
TEST(QueryCodec, BlankCodecSpecMeansNone) {
  for (const char* ag : {" \t ", ""}) {
    RunOptions o = policy("   ", 0);
    o.config.codecAllGather = ag;
    runRanks(1, Mode::Threads, [](Rank& r) {
      EXPECT_EQ(query(r.comm, cocclCollAllReduce, 4096, cocclFloat32, cocclSum).compressed, 0);
      EXPECT_EQ(query(r.comm, cocclCollAllGather, 4096, cocclFloat32, cocclSum).compressed, 0);
    }, o);
  }
}
}  // namespace

// cocclCommGetPhaseTimes: only the CUDA IPC kernels keep phase times (COCCL_PHASE_TIMES=1);
// on host ranks it is a usage error that says so, and NULL arguments are refused. (The counters
// themselves: DeviceEmulated.PhaseTimes and the GPU suite's DevicePhaseTimes.)
TEST(GetPhaseTimes, HostCommunicatorHasNone) {
  runRanks(2, Mode::Threads, [](Rank& r) {
    cocclPhaseTimes_t t;
    EXPECT_EQ(cocclCommGetPhaseTimes(r.comm, &t), cocclInvalidUsage);
    const std::string why = lastError();  // (both ranks' calls leave the same message)
    EXPECT_NE(why.find("COCCL_PHASE_TIMES=1"), std::string::npos) << why;
  });
  runRanks(1, Mode::Threads, [](Rank& r) {
    cocclPhaseTimes_t t;
    EXPECT_EQ(cocclCommGetPhaseTimes(r.comm, nullptr), cocclInvalidArgument);
    EXPECT_NE(lastError().find("times is NULL"), std::string::npos) << lastError();
    EXPECT_EQ(cocclCommGetPhaseTimes(nullptr, &t), cocclInvalidArgument);
  });
}
