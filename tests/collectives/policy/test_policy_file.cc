// The policy file parser (src/collectives/policy_file.h, policy_json.h): what a good file
// becomes, and every documented error with its message (file and line).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>

#include "collectives/policy_file.h"
#include "core/error.h"

using namespace coccl;

namespace {

// The message parsePolicyText throws for `text` ("" when it parses), checking the code.
std::string errorOf(const std::string& text) {
  try {
    parsePolicyText(text, "p.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), cocclInvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(text, says)                                                     \
  do {                                                                               \
    const std::string got_ = errorOf(text);                                          \
    EXPECT_NE(got_.find(says), std::string::npos) << "got: " << got_;                 \
  } while (0)

}  // namespace

TEST(PolicyFile, ParsesEveryField) {
  const PolicyFile f = parsePolicyText(R"({
  // comments are allowed
  "rules": [
    {"name": "tp*", "nranks": 8, "stride": 1, "collective": ["allreduce", "allgather"],
     "dtype": ["bf16", "half"], "bytes": {"from": "64K", "below": 1073741824},
     "codec": "fp8_ash_ds", "min_bytes": "1M"},
    {"members": [12, 4, 8, 0], "collective": "reducescatter", "codec": "hier:intra=int8,inter=fp8_ash_ds"},
    /* point-to-point by name */
    {"collective": "sendrecv", "codec": "int8:block=64"},
    {"dtype": "float", "codec": "none"}
  ]
})", "p.json");
  ASSERT_EQ(f.rules.size(), 4u);
  const PolicyRule& a = f.rules[0];
  EXPECT_EQ(a.line, 4);
  EXPECT_TRUE(a.hasName);
  EXPECT_EQ(a.name, "tp*");
  EXPECT_EQ(a.nranks, 8);
  EXPECT_EQ(a.stride, 1);
  EXPECT_EQ(a.colls, unsigned(kPolicyAllReduce | kPolicyAllGather));
  EXPECT_EQ(a.dtypes, (1u << cocclBfloat16) | (1u << cocclFloat16));
  EXPECT_EQ(a.bytesFrom, 65536u);
  EXPECT_EQ(a.bytesBelow, 1073741824u);
  EXPECT_EQ(a.minBytes, 1 << 20);
  EXPECT_EQ(a.entry.spec().rfind("fp8_ash_ds:block=128,", 0), 0u) << a.entry.spec();
  EXPECT_EQ(a.callText(), "allreduce,allgather dtype half,bfloat16 bytes [64K, 1G)");
  const PolicyRule& b = f.rules[1];
  EXPECT_EQ(b.line, 7);
  EXPECT_EQ(b.members, (std::vector<int>{0, 4, 8, 12}));
  EXPECT_EQ(b.colls, unsigned(kPolicyReduceScatter));
  EXPECT_EQ(b.minBytes, -1);
  EXPECT_NE(b.entry.inter, nullptr);
  EXPECT_EQ(b.entry.spec().rfind("hier:intra=int8", 0), 0u) << b.entry.spec();
  EXPECT_EQ(f.rules[2].colls, unsigned(kPolicySendRecv));
  EXPECT_EQ(f.rules[2].line, 9);
  // No "collective": the three collectives, not Send/Recv.
  EXPECT_EQ(f.rules[3].colls, unsigned(kPolicyCollectives));
  EXPECT_EQ(f.rules[3].entry.codec, nullptr);
  EXPECT_EQ(f.rules[3].dtypes, 1u << cocclFloat32);
}

TEST(PolicyFile, EmptyRuleListIsValid) {
  EXPECT_TRUE(parsePolicyText(R"({"rules": []})", "p.json").rules.empty());
}

TEST(PolicyFile, UnreadableFile) {
  EXPECT_THROW(loadPolicyFile("/nonexistent/policy.json"), Error);
  try {
    loadPolicyFile("/nonexistent/policy.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), cocclInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("policy file '/nonexistent/policy.json': cannot read it"),
              std::string::npos) << e.what();
  }
  try {
    loadPolicyFile("/");  // a directory
    ADD_FAILURE() << "a directory parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("policy file '/': not a regular file (a directory)"),
              std::string::npos) << e.what();
  }
}

// A FIFO is refused at once: reading it would block init forever (no writer), past
// COCCL_TIMEOUT_MS. Before, loadPolicyFile blocked in open().
TEST(PolicyFile, FifoIsRefusedWithoutBlocking) {
  char dir[] = "/tmp/coccl_policy_fifo_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/p.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string what;
  auto done = std::async(std::launch::async, [&] {
    try {
      loadPolicyFile(fifo);
    } catch (const Error& e) {
      what = e.what();
    }
  });
  const bool returned = done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!returned) {  // unblock the reader so that the test ends
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  done.wait();
  ::unlink(fifo.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(returned) << "loadPolicyFile blocked on a FIFO";
  EXPECT_NE(what.find("not a regular file (a FIFO)"), std::string::npos) << what;
}

TEST(PolicyFile, ReadsAFile) {
  char path[] = "/tmp/coccl_policy_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "{\"rules\": [\n  {\"codec\": \"int9\"}\n]}\n";
  try {
    loadPolicyFile(path);
    ADD_FAILURE() << "parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("policy file '") + path + "' line 2: "),
              std::string::npos) << e.what();
  }
  unlink(path);
}

TEST(PolicyFile, JsonSyntaxNamesLineAndColumn) {
  EXPECT_ERROR("{\"rules\": [\n  {\"codec\": \"int8\",}\n]}", "policy file 'p.json' line 2, column 20: syntax error");
  EXPECT_ERROR("{\"rules\": [\n\n  {\"codec\" \"int8\"}]}", "line 3, column");
  EXPECT_ERROR("", "policy file 'p.json' line 1, column 1");
  EXPECT_ERROR("{\"rules\": []} trailing", "line 1, column");
  EXPECT_ERROR("{\"rules\": [{\"codec\": \"int8\"}]", "syntax error");
}

TEST(PolicyFile, DuplicateKey) {
  EXPECT_ERROR("{\"rules\": [\n {\"codec\": \"int8\",\n  \"codec\": \"none\"}]}",
               "line 3: duplicate key \"codec\" (first on line 2)");
}

TEST(PolicyFile, TooDeep) {
  EXPECT_ERROR(std::string(40, '[') + std::string(40, ']'), "nested deeper than 32");
}

TEST(PolicyFile, TopLevel) {
  EXPECT_ERROR("[]", "line 1: the file must be an object");
  EXPECT_ERROR("{}", "line 1: the file has no \"rules\" list");
  EXPECT_ERROR("{\n\"rules\": [],\n\"rulez\": 1}", "line 3: unknown key \"rulez\" (the file takes rules)");
  EXPECT_ERROR("{\"rules\": {}}", "rules must be a list, not an object");
  EXPECT_ERROR("{\"rules\": [\n 7]}", "line 2: a rule must be an object, not an integer");
}

TEST(PolicyFile, UnknownKey) {
  EXPECT_ERROR("{\"rules\": [\n {\"codec\": \"int8\",\n  \"colective\": \"allreduce\"}]}",
               "policy file 'p.json' line 3: unknown key \"colective\" (a rule takes name, nranks");
  EXPECT_ERROR("{\"rules\": [{\"codec\": \"int8\", \"bytes\": {\n\"to\": 5}}]}",
               "line 2: unknown key \"to\" in bytes (it takes from, below)");
}

TEST(PolicyFile, WrongTypes) {
  auto rule = [](const std::string& body) { return "{\"rules\": [\n{\"codec\": \"int8\",\n" + body + "}]}"; };
  EXPECT_ERROR(rule("\"nranks\": \"8\""), "line 3: nranks must be an integer, not a string");
  EXPECT_ERROR(rule("\"nranks\": 0"), "line 3: nranks must be in 1..");
  EXPECT_ERROR(rule("\"stride\": 1.5"), "line 3: stride must be an integer, not a number");
  EXPECT_ERROR(rule("\"name\": 3"), "line 3: name must be a string, not an integer");
  EXPECT_ERROR(rule("\"members\": 3"), "line 3: members must be a list of world ranks");
  EXPECT_ERROR(rule("\"members\": [0, -1]"), "line 3: a member must be in 0..");
  EXPECT_ERROR(rule("\"members\": [0, 1, 0]"), "members lists world rank 0 twice");
  EXPECT_ERROR(rule("\"collective\": \"alltoall\""),
               "line 3: unknown collective \"alltoall\" (one of allreduce, reducescatter, "
               "allgather, sendrecv)");
  EXPECT_ERROR(rule("\"collective\": [\"allreduce\", 2]"), "line 3: collective lists an integer");
  EXPECT_ERROR(rule("\"collective\": true"), "collective must be a string or a list of strings, not a boolean");
  EXPECT_ERROR(rule("\"dtype\": \"float128\""), "line 3: unknown dtype \"float128\"");
  EXPECT_ERROR(rule("\"bytes\": 5"), "line 3: bytes must be an object");
  EXPECT_ERROR(rule("\"bytes\": {\"from\": -1}"), "bytes.from must be >= 0, not -1");
  EXPECT_ERROR(rule("\"bytes\": {\"from\": \"64Q\"}"), "bytes.from \"64Q\" is not a byte count");
  EXPECT_ERROR(rule("\"min_bytes\": null"), "min_bytes must be a byte count");
  EXPECT_ERROR(rule("\"warmup_calls\": -1"), "line 3: warmup_calls must be an integer >= 0");
  EXPECT_ERROR(rule("\"warmup_calls\": \"100\""), "warmup_calls must be an integer >= 0");
  EXPECT_EQ(parsePolicyText(rule("\"warmup_calls\": 400"), "p.json").rules[0].warmupCalls, 400u);
  // Beyond int64: out of range (it used to say "a number with a fraction"); a string of 19
  // digits is read (it used to stop at 18); a NUL inside a string is refused (it cut the name).
  EXPECT_ERROR(rule("\"min_bytes\": 18446744073709551615"),
               "line 3: the integer 18446744073709551615 is out of range");
  EXPECT_ERROR(rule("\"min_bytes\": 18446744073709551616"),
               "line 3: the integer 18446744073709551616 is out of range");
  EXPECT_ERROR(rule("\"nranks\": -9223372036854775809"), "the integer -9223372036854775809 is out");
  EXPECT_EQ(errorOf(rule("\"bytes\": {\"from\": \"9223372036854775807\"}")), "");
  EXPECT_ERROR(rule("\"bytes\": {\"from\": \"9223372036854775808\"}"), "is not a byte count");
  EXPECT_ERROR("{\"rules\": [\n{\"codec\": \"int8\\u0000junk\"}]}",
               "line 2: a string holds a NUL character");
  EXPECT_ERROR("{\"rules\": [\n{\"codec\": 8}]}", "line 2: codec must be a codec spec string, not an integer");
  EXPECT_ERROR("{\"rules\": [\n{\"collective\": \"allreduce\"}]}", "line 2: the rule has no \"codec\"");
}

TEST(PolicyFile, ExactPath) {
  const PolicyFile f = parsePolicyText(R"({"rules": [
    {"bytes": {"below": "1M"}, "codec": "none", "exact": "coccl"},
    {"dtype": "bf16", "codec": "int8", "exact": "nccl"},
    {"codec": "none"}
  ]})",
                                       "p.json");
  ASSERT_EQ(f.rules.size(), 3u);
  EXPECT_EQ(f.rules[0].exact, ExactPath::Coccl);
  EXPECT_EQ(f.rules[1].exact, ExactPath::Nccl);
  EXPECT_EQ(f.rules[2].exact, ExactPath::Default);
  auto rule = [](const std::string& body) {
    return "{\"rules\": [\n{\"codec\": \"none\",\n" + body + "}]}";
  };
  EXPECT_ERROR(rule("\"exact\": \"NCCL\""),
               "line 3: exact must be \"nccl\" or \"coccl\" (who runs the uncompressed calls), "
               "not \"NCCL\"");
  EXPECT_ERROR(rule("\"exact\": 1"), "line 3: exact must be \"nccl\" or \"coccl\"");
  EXPECT_ERROR(rule("\"collective\": [\"allreduce\", \"sendrecv\"],\n\"exact\": \"coccl\""),
               "line 4: exact applies to the collectives (allreduce, reducescatter, allgather), "
               "not to sendrecv");
}

// "delta": a boolean, on allgather rules with a codec only.
TEST(PolicyFile, Delta) {
  const PolicyFile f = parsePolicyText(R"({"rules": [
    {"collective": "allgather", "dtype": "float", "codec": "int8", "delta": true},
    {"collective": ["allgather"], "codec": "int8", "delta": false},
    {"codec": "int8"}
  ]})",
                                       "p.json");
  ASSERT_EQ(f.rules.size(), 3u);
  EXPECT_TRUE(f.rules[0].delta);
  EXPECT_FALSE(f.rules[1].delta);
  EXPECT_FALSE(f.rules[2].delta);
  auto rule = [](const std::string& body) {
    return "{\"rules\": [\n{\"codec\": \"int8\",\n" + body + "}]}";
  };
  EXPECT_ERROR(rule("\"collective\": \"allgather\",\n\"delta\": 1"),
               "line 4: delta must be true or false, not an integer");
  EXPECT_ERROR(rule("\"delta\": true"),
               "line 3: delta applies to allgather alone: the rule's collective must be "
               "\"allgather\"");
  EXPECT_ERROR(rule("\"collective\": [\"allgather\", \"reducescatter\"],\n\"delta\": true"),
               "line 4: delta applies to allgather alone");
  EXPECT_ERROR(
      "{\"rules\": [\n{\"codec\": \"none\", \"collective\": \"allgather\",\n"
      "\"delta\": true}]}",
      "line 3: delta needs a codec");
}

// "direction": sendrecv rules alone, "up" or "down"; a rule of one direction does not hide a
// later rule of the other, while a rule of either direction hides both.
TEST(PolicyFile, Direction) {
  const PolicyFile f = parsePolicyText(R"({"rules": [
    {"collective": "sendrecv", "direction": "up", "codec": "int8"},
    {"collective": "sendrecv", "direction": "down", "codec": "none"}
  ]})",
                                       "p.json");
  ASSERT_EQ(f.rules.size(), 2u);
  EXPECT_EQ(f.rules[0].direction, P2PDir::Up);
  EXPECT_EQ(f.rules[1].direction, P2PDir::Down);
  EXPECT_EQ(f.rules[0].callText(), "sendrecv up");
  auto rule = [](const std::string& body) {
    return "{\"rules\": [\n{\"codec\": \"int8\",\n" + body + "}]}";
  };
  EXPECT_ERROR(rule("\"collective\": \"sendrecv\",\n\"direction\": \"left\""),
               "line 4: direction must be \"up\" (messages to a higher rank) or \"down\", not "
               "\"left\"");
  EXPECT_ERROR(rule("\"collective\": \"sendrecv\",\n\"direction\": 1"),
               "line 4: direction must be");
  EXPECT_ERROR(rule("\"direction\": \"up\""), "line 3: direction applies to sendrecv alone");
  EXPECT_ERROR(rule("\"collective\": [\"sendrecv\", \"allreduce\"],\n\"direction\": \"up\""),
               "line 4: direction applies to sendrecv alone");
  EXPECT_ERROR(
      "{\"rules\": [{\"collective\": \"sendrecv\", \"codec\": \"int8\"},\n"
      "{\"collective\": \"sendrecv\", \"direction\": \"down\", \"codec\": \"none\"}]}",
      "line 2");
}

TEST(PolicyFile, BadCodecSpecGivesTheSpecParsersMessage) {
  // The spec parser's own message follows the line.
  EXPECT_ERROR("{\"rules\": [\n{\"collective\": \"allreduce\",\n \"codec\": \"int8:blok=64\"}]}",
               "policy file 'p.json' line 3: codec spec");
  EXPECT_ERROR("{\"rules\": [\n{\"codec\": \"nosuchcodec\"}]}", "nosuchcodec");
  // hier: is for the reductions.
  EXPECT_ERROR(
      "{\"rules\": [\n{\"collective\": \"allgather\", \"codec\": \"hier:intra=int8,inter=int8\"}]}",
      "line 2: codec spec 'hier:intra=int8,inter=int8': two-level (hier:) specs are for AllReduce "
      "and ReduceScatter");
  EXPECT_ERROR("{\"rules\": [\n{\"codec\": \"hier:intra=int8,inter=int8\"}]}", "two-level");
}

TEST(PolicyFile, RulesThatCanNeverMatch) {
  auto rule = [](const std::string& body) { return "{\"rules\": [\n{\"codec\": \"int8\",\n" + body + "}]}"; };
  EXPECT_ERROR(rule("\"collective\": []"), "line 3: this rule can never match: collective is an empty list");
  EXPECT_ERROR(rule("\"dtype\": []"), "this rule can never match: dtype is an empty list");
  EXPECT_ERROR(rule("\"members\": []"), "this rule can never match: members is an empty list");
  EXPECT_ERROR(rule("\"bytes\": {\"from\": \"1M\", \"below\": \"1M\"}"),
               "line 3: this rule can never match: bytes from 1M is not below 1M");
  EXPECT_ERROR(rule("\"members\": [0, 1], \"nranks\": 4"),
               "line 2: this rule can never match: 2 members but nranks 4");
  EXPECT_ERROR(rule("\"members\": [0, 2, 3], \"stride\": 2"),
               "this rule can never match: members 2 and 3 are not stride 2 apart");
  EXPECT_ERROR(rule("\"dtype\": [\"int32\", \"double\"]"),
               "line 2: codec int8:block=128,rotate=auto encodes none of the rule's types");
  EXPECT_ERROR(rule("\"bytes\": {\"below\": \"1M\"}, \"min_bytes\": \"1M\""),
               "line 2: min_bytes 1M is not below bytes.below 1M");
  // Shadowed by an earlier rule.
  EXPECT_ERROR(
      "{\"rules\": [\n{\"codec\": \"none\"},\n{\"collective\": \"allreduce\", \"codec\": "
      "\"int8\"}]}",
      "line 3: this rule can never match: the rule on line 2 takes every call it would");
  EXPECT_ERROR(
      "{\"rules\": [\n{\"name\": \"tp\", \"bytes\": {\"from\": 0, \"below\": \"1G\"}, \"codec\": "
      "\"none\"},\n"
      "{\"name\": \"tp\", \"nranks\": 8, \"bytes\": {\"from\": \"1M\", \"below\": \"2M\"}, "
      "\"codec\": \"int8\"}]}",
      "line 3: this rule can never match: the rule on line 2");
  // Not shadowed: another name, a wider range, Send/Recv after a rule without "collective".
  EXPECT_EQ(errorOf("{\"rules\": [{\"name\": \"tp\", \"codec\": \"none\"}, {\"name\": \"dp\", "
                    "\"codec\": \"int8\"},"
                    "{\"codec\": \"none\"}, {\"collective\": \"sendrecv\", \"codec\": \"int8\"}]}"),
            "");
}
