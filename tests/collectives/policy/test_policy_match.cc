// A communicator's resolved policy (src/collectives/policy.h): which rules of a file apply to
// which communicator (name, size, members' world ranks, stride), which rule decides a call
// (collective, type, byte range, first match), the per-rule threshold, the default rule from
// the COCCL_CODEC* entries, and the description every rank agrees on.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "codecs/abi/registry.h"
#include "collectives/policy.h"
#include "core/dtype.h"
#include "core/error.h"

using namespace coccl;

namespace {

const char* kFile = R"({"rules": [
  {"name": "tp*", "collective": "allreduce", "dtype": "bf16",
   "bytes": {"from": "1M"}, "codec": "int8", "min_bytes": 0},
  {"name": "tp*", "collective": "allreduce", "codec": "fp8_ash_ds", "min_bytes": "4K"},
  {"nranks": 2, "stride": 4, "collective": "reducescatter", "codec": "int8"},
  {"members": [1, 3, 5], "collective": "allgather", "codec": "int8"},
  {"name": "pp", "collective": "sendrecv", "codec": "fp8_ash_ds"},
  {"name": "exact", "codec": "none"}
]})";

CommFacts comm(const std::string& name, std::vector<int> world) {
  CommFacts f;
  f.name = name;
  f.nranks = static_cast<int>(world.size());
  f.worldRanks = std::move(world);
  return f;
}

// The codec name the policy picks, "none" for exact.
std::string pick(const CodecPolicy& p, Coll k, cocclDataType_t dt, size_t bytes,
                 cocclRedOp_t op = cocclSum) {
  const CodecPolicy::Choice c = p.choose(k, dt, op, bytes, bytes / dtypeSize(dt), nullptr);
  return c.codec ? c.name : "none";
}

PolicyConfig defaults(const std::string& codec = "") {
  PolicyConfig c;
  c.codec = codec;
  c.compressMinBytes = 65536;
  return c;
}

}  // namespace

TEST(PolicyMatch, NameCollectiveTypeAndRangeFirstMatch) {
  const PolicyFile f = parsePolicyText(kFile, "p.json");
  const CodecPolicy p(defaults(), &f, comm("tp3", {0, 1, 2, 3}));
  // bf16 from 1 MiB: rule 1 (int8); below it, and other types: rule 2 (fp8_ash_ds from 4K).
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclBfloat16, 1 << 20), "int8");
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclBfloat16, (1 << 20) - 2), "fp8_ash_ds");
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclFloat32, 1 << 20), "fp8_ash_ds");
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclFloat32, 4096), "fp8_ash_ds");
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclFloat32, 4092), "none");  // rule 2's min_bytes
  // The rule decides; the op and type still have to be compressible.
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclFloat32, 1 << 20, cocclMax), "none");
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclInt32, 1 << 20), "none");
  // Other collectives of this communicator: the default (none here).
  EXPECT_EQ(pick(p, Coll::ReduceScatter, cocclFloat32, 1 << 20), "none");
  EXPECT_EQ(pick(p, Coll::Send, cocclFloat32, 1 << 20), "none");
}

TEST(PolicyMatch, DefaultRuleIsTheEnvironmentsEntries) {
  const PolicyFile f = parsePolicyText(kFile, "p.json");
  PolicyConfig d = defaults("int8");
  d.codecSendRecv = "fp8_ash_ds";
  const CodecPolicy p(d, &f, comm("other", {0, 1}));
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclFloat32, 1 << 20), "int8");
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclFloat32, 65532), "none");  // COCCL_COMPRESS_MIN_BYTES
  EXPECT_EQ(pick(p, Coll::AllGather, cocclFloat32, 1 << 20), "int8");
  EXPECT_EQ(pick(p, Coll::Recv, cocclFloat32, 1 << 20), "fp8_ash_ds");
  // A rule of "none" wins over a compressing default.
  const CodecPolicy x(d, &f, comm("exact", {0, 1}));
  EXPECT_EQ(pick(x, Coll::AllReduce, cocclFloat32, 1 << 20), "none");
  EXPECT_EQ(pick(x, Coll::Send, cocclFloat32, 1 << 20), "fp8_ash_ds");  // not a sendrecv rule
  // No file at all: the old behaviour.
  const CodecPolicy e(d);
  EXPECT_EQ(pick(e, Coll::ReduceScatter, cocclBfloat16, 1 << 20), "int8");
}

TEST(PolicyMatch, MembersAndStrideAreWorldRanks) {
  const PolicyFile f = parsePolicyText(kFile, "p.json");
  // Rule 3: two members 4 apart, in any order.
  EXPECT_EQ(pick(CodecPolicy(defaults(), &f, comm("", {6, 2})), Coll::ReduceScatter, cocclFloat32,
                 1 << 20), "int8");
  EXPECT_EQ(pick(CodecPolicy(defaults(), &f, comm("", {2, 5})), Coll::ReduceScatter, cocclFloat32,
                 1 << 20), "none");
  EXPECT_EQ(pick(CodecPolicy(defaults(), &f, comm("", {0, 4, 8})), Coll::ReduceScatter,
                 cocclFloat32, 1 << 20), "none");  // nranks 2
  // Rule 4: exactly the set {1, 3, 5}.
  EXPECT_EQ(pick(CodecPolicy(defaults(), &f, comm("", {5, 1, 3})), Coll::AllGather, cocclFloat32,
                 1 << 20), "int8");
  EXPECT_EQ(pick(CodecPolicy(defaults(), &f, comm("", {1, 3})), Coll::AllGather, cocclFloat32,
                 1 << 20), "none");
  EXPECT_EQ(pick(CodecPolicy(defaults(), &f, comm("", {1, 3, 5, 7})), Coll::AllGather,
                 cocclFloat32, 1 << 20), "none");
}

TEST(PolicyMatch, RepeatedWorldRanksFailARuleOnMembers) {
  const PolicyFile f = parsePolicyText(kFile, "p.json");
  try {
    CodecPolicy p(defaults(), &f, comm("", {0, 0}));
    ADD_FAILURE() << "resolved";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), cocclInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("policy file 'p.json' line 5 matches on members' world "
                                         "ranks, but world rank 0 belongs to more than one rank"),
              std::string::npos) << e.what();
  }
  // A file without members or stride does not care.
  const PolicyFile g = parsePolicyText(R"({"rules": [{"name": "a", "codec": "int8"}]})", "g.json");
  EXPECT_NO_THROW(CodecPolicy(defaults(), &g, comm("a", {0, 0})));
}

TEST(PolicyMatch, SendRecvRuleAndTwoLevelEntries) {
  const PolicyFile f = parsePolicyText(R"({"rules": [
    {"collective": "sendrecv", "name": "pp", "codec": "fp8_ash_ds"},
    {"collective": ["allreduce", "reducescatter"], "codec": "hier:intra=int8,inter=fp8_ash_ds"}]})",
                                       "p.json");
  const CodecPolicy p(defaults("int8"), &f, comm("pp", {0, 1, 2, 3}));
  EXPECT_EQ(pick(p, Coll::Send, cocclBfloat16, 1 << 20), "fp8_ash_ds");
  EXPECT_EQ(pick(p, Coll::Send, cocclBfloat16, 1000), "none");  // the default threshold
  const CodecPolicy::Choice c =
      p.choose(Coll::ReduceScatter, cocclFloat32, cocclAvg, 1 << 20, (1 << 20) / 4, nullptr);
  ASSERT_NE(c.codec, nullptr);
  ASSERT_NE(c.inter, nullptr);
  EXPECT_EQ(std::string(c.name).rfind("hier:intra=int8", 0), 0u) << c.name;
  EXPECT_EQ(pick(p, Coll::AllGather, cocclFloat32, 1 << 20), "int8");  // the default's
}

TEST(PolicyMatch, ForcedCodecWins) {
  const PolicyFile f = parsePolicyText(R"({"rules": [{"codec": "none"}]})", "p.json");
  const CodecPolicy p(defaults(), &f, comm("", {0, 1}));
  const CodecPtr int8 = makeCodec("int8");
  EXPECT_EQ(p.choose(Coll::AllReduce, cocclFloat32, cocclSum, 64, 16, int8.get()).codec,
            int8.get());
  EXPECT_EQ(
      p.choose(Coll::AllReduce, cocclInt32, cocclSum, 1 << 20, (1 << 20) / 4, int8.get()).codec,
      nullptr);
}

// The deciding rule's "exact" comes with every call it leaves uncompressed: below its
// min_bytes, an op or type it cannot compress, codec "none"; a forced codec and the default
// rule leave the communicator's default.
TEST(PolicyMatch, ExactPathOfTheDecidingRule) {
  const PolicyFile f = parsePolicyText(R"({"rules": [
    {"bytes": {"below": "64K"}, "codec": "none", "exact": "coccl"},
    {"collective": "allreduce", "dtype": "bf16", "codec": "int8", "min_bytes": "1M",
     "exact": "nccl"}
  ]})",
                                       "p.json");
  const CodecPolicy p(defaults(), &f, comm("", {0, 1}));
  EXPECT_TRUE(p.asksForNcclExact());
  auto exactOf = [&](Coll k, cocclDataType_t dt, size_t bytes, cocclRedOp_t op = cocclSum) {
    return p.choose(k, dt, op, bytes, bytes / dtypeSize(dt), nullptr).exact;
  };
  EXPECT_EQ(exactOf(Coll::AllGather, cocclFloat32, 8), ExactPath::Coccl);
  EXPECT_EQ(exactOf(Coll::AllReduce, cocclBfloat16, 65536), ExactPath::Nccl);  // below min_bytes
  EXPECT_EQ(exactOf(Coll::AllReduce, cocclBfloat16, 4 << 20, cocclMax), ExactPath::Nccl);
  EXPECT_EQ(pick(p, Coll::AllReduce, cocclBfloat16, 4 << 20), "int8");
  EXPECT_EQ(exactOf(Coll::AllReduce, cocclFloat32, 4 << 20), ExactPath::Default);  // default rule
  EXPECT_EQ(exactOf(Coll::Send, cocclFloat32, 8), ExactPath::Default);
  const CodecPtr int8 = makeCodec("int8");
  EXPECT_EQ(p.choose(Coll::AllGather, cocclInt32, cocclSum, 8, 2, int8.get()).exact,
            ExactPath::Default);
  const auto d = p.describe();
  ASSERT_GE(d.size(), 2u);
  EXPECT_EQ(d[0],
            "policy file p.json line 2: allreduce,reducescatter,allgather bytes [0, 64K): "
            "none exact on coccl");
  EXPECT_EQ(d[1].substr(d[1].size() - 21), "from 1M exact on nccl");
  EXPECT_FALSE(CodecPolicy(defaults(), nullptr, comm("", {0, 1})).asksForNcclExact());
}

// "warmup_calls": the deciding rule leaves calls numbered below it exact, its later calls get
// the codec; another rule's calls and queries (kNoCallNo) are not affected; the resolved
// policy says it.
TEST(PolicyMatch, WarmupCallsOfTheDecidingRule) {
  const PolicyFile f = parsePolicyText(R"({"rules": [
    {"collective": "sendrecv", "codec": "int8", "min_bytes": 0, "warmup_calls": 400},
    {"collective": "allreduce", "codec": "fp8_ash_ds", "min_bytes": 0}
  ]})", "p.json");
  const CodecPolicy p(defaults(), &f, comm("", {0, 1}));
  auto codecAt = [&](Coll k, uint64_t callNo) {
    const Codec* c = p.select(k, cocclBfloat16, cocclSum, 1 << 20, 1 << 19, nullptr, callNo);
    return std::string(c ? c->name() : "none");
  };
  EXPECT_EQ(codecAt(Coll::Send, 0), "none");
  EXPECT_EQ(codecAt(Coll::Recv, 399), "none");
  EXPECT_EQ(codecAt(Coll::Send, 400), "int8");
  EXPECT_EQ(codecAt(Coll::Send, CodecPolicy::kNoCallNo), "int8");
  EXPECT_EQ(codecAt(Coll::AllReduce, 0), "fp8_ash_ds");
  const auto d = p.describe();
  ASSERT_GE(d.size(), 1u);
  EXPECT_NE(d[0].find("int8:block=128,rotate=auto from 0 after 400 exact calls"), std::string::npos)
      << d[0];
}

// "direction": a sendrecv rule matches the messages of its direction alone (the other's go on
// to the next rule); a query (no direction) takes the first sendrecv rule.
TEST(PolicyMatch, DirectionOfSendRecvRules) {
  const PolicyFile f = parsePolicyText(R"({"rules": [
    {"collective": "sendrecv", "direction": "up", "codec": "int8", "min_bytes": 0},
    {"collective": "sendrecv", "direction": "down", "codec": "fp8_ash_ds", "min_bytes": 0}
  ]})",
                                       "p.json");
  const CodecPolicy p(defaults(), &f, comm("", {0, 1}));
  auto codecOf = [&](Coll k, P2PDir dir) {
    const Codec* c = p.select(k, cocclBfloat16, cocclSum, 1 << 20, 1 << 19, nullptr,
                              CodecPolicy::kNoCallNo, dir);
    return std::string(c ? c->name() : "none");
  };
  EXPECT_EQ(codecOf(Coll::Send, P2PDir::Up), "int8");
  EXPECT_EQ(codecOf(Coll::Recv, P2PDir::Up), "int8");
  EXPECT_EQ(codecOf(Coll::Send, P2PDir::Down), "fp8_ash_ds");
  EXPECT_EQ(codecOf(Coll::Recv, P2PDir::Down), "fp8_ash_ds");
  EXPECT_EQ(codecOf(Coll::Send, P2PDir::Any), "int8");
  const PolicyFile up = parsePolicyText(R"({"rules": [
    {"collective": "sendrecv", "direction": "up", "codec": "int8", "min_bytes": 0}
  ]})",
                                        "p.json");
  const CodecPolicy q(defaults(), &up, comm("", {0, 1}));
  const Codec* down = q.select(Coll::Send, cocclBfloat16, cocclSum, 1 << 20, 1 << 19, nullptr,
                               CodecPolicy::kNoCallNo, P2PDir::Down);
  EXPECT_EQ(down, nullptr);  // the environment's default: exact
}

// A "delta" rule marks the AllGather calls it compresses (Choice::delta), and no other call:
// not below its min_bytes, not a type its codec does not encode, not other rules' calls.
TEST(PolicyMatch, DeltaOfTheDecidingRule) {
  const PolicyFile f = parsePolicyText(R"({"rules": [
    {"name": "dp*", "collective": "allgather", "codec": "int8", "delta": true, "min_bytes": "64K"}
  ]})",
                                       "p.json");
  const CodecPolicy dp(defaults("int8"), &f, comm("dp0", {0, 1}));
  auto choice = [](const CodecPolicy& p, Coll k, cocclDataType_t dt, size_t bytes) {
    return p.choose(k, dt, cocclSum, bytes, bytes / dtypeSize(dt) / 2, nullptr);
  };
  EXPECT_TRUE(choice(dp, Coll::AllGather, cocclFloat32, 1 << 20).delta);
  EXPECT_TRUE(choice(dp, Coll::AllGather, cocclBfloat16, 1 << 20).delta);
  EXPECT_FALSE(choice(dp, Coll::AllGather, cocclFloat32, 4096).delta);     // below min_bytes
  EXPECT_FALSE(choice(dp, Coll::AllGather, cocclInt32, 1 << 20).delta);    // not encoded
  EXPECT_FALSE(choice(dp, Coll::ReduceScatter, cocclFloat32, 1 << 20).delta);  // default rule
  EXPECT_NE(choice(dp, Coll::ReduceScatter, cocclFloat32, 1 << 20).codec, nullptr);
  const CodecPolicy other(defaults("int8"), &f, comm("tp0", {0, 1}));
  EXPECT_FALSE(choice(other, Coll::AllGather, cocclFloat32, 1 << 20).delta);
  EXPECT_NE(choice(other, Coll::AllGather, cocclFloat32, 1 << 20).codec, nullptr);
  const auto d = dp.describe();
  ASSERT_GE(d.size(), 1u);
  EXPECT_EQ(d[0].substr(d[0].size() - 14), "from 64K delta") << d[0];
}

TEST(PolicyMatch, DescribeListsTheRulesOfThisCommunicator) {
  const PolicyFile f = parsePolicyText(kFile, "p.json");
  const auto tp = CodecPolicy(defaults("int8"), &f, comm("tp0", {0, 1})).describe();
  ASSERT_EQ(tp.size(), 2u + 4u);  // rules 1 and 2, then the default's four entries
  EXPECT_EQ(tp[0], "policy file p.json line 2: allreduce dtype bfloat16 bytes [1M, inf): "
                   "int8:block=128,rotate=auto from 0");
  EXPECT_EQ(tp[1], "policy file p.json line 4: allreduce: " + makeCodec("fp8_ash_ds")->spec() +
                       " from 4K");
  EXPECT_EQ(tp[2], "default: allreduce: int8:block=128,rotate=auto from 64K");
  EXPECT_EQ(tp[5], "default: sendrecv: none");
  const auto other = CodecPolicy(defaults("int8"), &f, comm("dp", {0, 1})).describe();
  EXPECT_EQ(other.size(), 4u);
}

// perf/policy/3d-training.json with the in-tree plug-ins (ctest policy_example sets
// COCCL_CODEC_PLUGIN to int4 and tah; without it the plug-ins' names are unknown).
TEST(PolicyExample, ThreeDTraining) {
  if (!getenv("COCCL_CODEC_PLUGIN")) GTEST_SKIP() << "run by the ctest policy_example";
  ASSERT_EQ(loadEnvCodecPlugins(), "");
  const PolicyFile f = loadPolicyFile(COCCL_SOURCE_DIR "/perf/policy/3d-training.json");
  ASSERT_EQ(f.rules.size(), 6u);
  auto range = [](int first, int step, int n) {
    std::vector<int> v;
    for (int i = 0; i < n; ++i) v.push_back(first + i * step);
    return v;
  };
  const CodecPolicy tp(defaults(), &f, comm("", range(8, 1, 8)));
  const CodecPolicy dp(defaults(), &f, comm("", range(3, 8, 4)));
  const CodecPolicy pp(defaults(), &f, comm("", range(5, 32, 2)));
  const CodecPolicy world(defaults(), &f, comm("", range(0, 1, 64)));
  EXPECT_EQ(pick(tp, Coll::AllReduce, cocclBfloat16, 1 << 20), "fp8_ash_ds");
  EXPECT_EQ(pick(tp, Coll::AllReduce, cocclBfloat16, 1 << 17), "none");  // min_bytes 256K
  EXPECT_EQ(pick(dp, Coll::ReduceScatter, cocclFloat32, 4 << 20), "int4");
  EXPECT_EQ(pick(dp, Coll::AllGather, cocclBfloat16, 4 << 20), "none");
  EXPECT_EQ(pick(pp, Coll::Send, cocclBfloat16, 1 << 20), "tah");
  // the activations up the pipeline through tah, their gradients back through int8
  const auto dirPick = [&](P2PDir d) {
    const CodecPolicy::Choice c = pp.choose(Coll::Send, cocclBfloat16, cocclSum, 1 << 20, 1 << 19,
                                            nullptr, CodecPolicy::kNoCallNo, d);
    return c.codec ? c.name : std::string("none");
  };
  EXPECT_EQ(dirPick(P2PDir::Up), "tah");
  EXPECT_EQ(dirPick(P2PDir::Down), "int8");
  // tah (row 4096, strict by default) refuses counts that are not whole rows: the policy then
  // sends them exact, and a per-call tah is an error naming the count and the row.
  EXPECT_EQ(pick(pp, Coll::Send, cocclBfloat16, (1 << 20) + 2 * 1000), "none");
  const CodecPtr tah = makeCodec("tah");
  EXPECT_EQ(pp.choose(Coll::Send, cocclBfloat16, cocclSum, 2 * 8192, 8192, tah.get()).codec,
            tah.get());
  try {
    pp.choose(Coll::Send, cocclBfloat16, cocclSum, 2 * 8193, 8193, tah.get());
    ADD_FAILURE() << "a per-call tah took a count that is not whole rows";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), cocclInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("refuses a count of 8193 bfloat16 elements: the codec "
                                         "takes whole blocks of 4096 elements only"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(pick(pp, Coll::AllReduce, cocclBfloat16, 1 << 20), "none");
  EXPECT_EQ(pick(world, Coll::AllReduce, cocclBfloat16, 1 << 20), "none");
}

// perf/policy/dp-int4-wd.json (perf/train/compare.sh run int4_dp_wd): int4 gradients, and the
// parameter all-gather as a weight-difference AllGather through int4.
TEST(PolicyExample, DataParallelInt4WeightDifference) {
  if (!getenv("COCCL_CODEC_PLUGIN")) GTEST_SKIP() << "run by the ctest policy_example";
  ASSERT_EQ(loadEnvCodecPlugins(), "");
  const PolicyFile f = loadPolicyFile(COCCL_SOURCE_DIR "/perf/policy/dp-int4-wd.json");
  ASSERT_EQ(f.rules.size(), 2u);
  const CodecPolicy dp(defaults(), &f, comm("", {1, 3}));
  EXPECT_EQ(pick(dp, Coll::ReduceScatter, cocclFloat32, 4 << 20), "int4");
  EXPECT_EQ(pick(dp, Coll::AllGather, cocclFloat32, 4 << 20), "int4");
  EXPECT_TRUE(dp.choose(Coll::AllGather, cocclFloat32, cocclSum, 4 << 20, 1 << 19, nullptr).delta);
  EXPECT_EQ(pick(dp, Coll::AllReduce, cocclBfloat16, 4 << 20), "none");  // TP: exact
}

// Every policy file shipped in perf/policy (and its measured tables in tuned/) parses with the
// in-tree plug-ins; the pipeline warm-up example switches at message 400.
TEST(PolicyExample, EveryShippedFileParses) {
  if (!getenv("COCCL_CODEC_PLUGIN")) GTEST_SKIP() << "run by the ctest policy_example";
  ASSERT_EQ(loadEnvCodecPlugins(), "");
  int files = 0;
  for (const char* sub : {"/perf/policy", "/perf/policy/tuned"}) {
    const std::string dir = std::string(COCCL_SOURCE_DIR) + sub;
    DIR* d = opendir(dir.c_str());
    ASSERT_NE(d, nullptr) << dir;
    while (const dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() < 5 || n.compare(n.size() - 5, 5, ".json") != 0) continue;
      EXPECT_NO_THROW(loadPolicyFile(dir + "/" + n)) << n;
      ++files;
    }
    closedir(d);
  }
  EXPECT_GE(files, 4);
  const PolicyFile f = loadPolicyFile(COCCL_SOURCE_DIR "/perf/policy/pp-tah-warmup.json");
  const CodecPolicy pp(defaults(), &f, comm("", {0, 2}));
  EXPECT_EQ(pp.select(Coll::Send, cocclBfloat16, cocclSum, 1 << 20, 1 << 19, nullptr, 399), nullptr);
  const Codec* c = pp.select(Coll::Recv, cocclBfloat16, cocclSum, 1 << 20, 1 << 19, nullptr, 400);
  ASSERT_NE(c, nullptr);
  EXPECT_STREQ(c->name(), "tah");
}


