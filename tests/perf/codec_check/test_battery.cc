// The codec conformance battery (perf/codec_check): it passes on every built-in codec and fails
// the right check on codecs broken on purpose (broken_codecs.h).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "battery.h"
#include "broken_codecs.h"

namespace coccl {
namespace test {
namespace {

check::Options quick() {
  check::Options o;
  o.quick = true;
  return o;
}

const check::CheckResult* find(const std::vector<check::CheckResult>& rs, const std::string& name) {
  for (const check::CheckResult& r : rs)
    if (r.name == name) return &r;
  return nullptr;
}

class BuiltIn : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltIn, PassesTheBattery) {
  CodecPtr c = makeCodec(GetParam());
  const std::vector<check::CheckResult> rs = check::runBattery(*c, quick());
  EXPECT_TRUE(check::allPassed(rs)) << check::formatTable(*c, rs);
  for (const char* name : {"bytes_written", "determinism", "roundtrip normal", "roundtrip tiny_blocks",
                           "partial_blocks", "non_finite", "decode_reduce_encode", "random_payloads",
                           "bounded_reads"})
    EXPECT_NE(find(rs, name), nullptr) << name;
}

INSTANTIATE_TEST_SUITE_P(Codecs, BuiltIn,
                         ::testing::Values("none", "int8", "int8:rotate=0", "fp8_ash_ds",
                                           "fp8_ash_ds:block=64"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string s = i.param;
                           for (char& ch : s)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

// The battery on a broken codec: `failing` must FAIL; every check in `passing` must PASS.
void expectVerdicts(const Codec& c, const std::string& failing,
                    const std::vector<std::string>& passing) {
  const std::vector<check::CheckResult> rs = check::runBattery(c, quick());
  const std::string table = check::formatTable(c, rs);
  std::printf("%s", table.c_str());  // the verdicts, in the test's log
  EXPECT_FALSE(check::allPassed(rs)) << table;
  const check::CheckResult* f = find(rs, failing);
  ASSERT_NE(f, nullptr) << table;
  EXPECT_FALSE(f->pass) << table;
  EXPECT_FALSE(f->detail.empty()) << table;
  for (const std::string& name : passing) {
    const check::CheckResult* p = find(rs, name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_TRUE(p->pass) << name << "\n" << table;
  }
}

TEST(Broken, OneBytePastTheEndFailsBytesWritten) {
  OverrunCodec c(makeCodec("int8"));
  expectVerdicts(c, "bytes_written", {"determinism", "decode_reduce_encode"});
  check::CheckResult r = check::checkBytesWritten(c, quick());
  EXPECT_NE(r.detail.find("encode payload: byte 1 past the end written"), std::string::npos)
      << r.detail;
}

TEST(Broken, CounterDependentEncodeFailsDeterminism) {
  NonDeterministicCodec c(makeCodec("fp8_ash_ds"));
  expectVerdicts(c, "determinism", {"bytes_written", "roundtrip normal", "partial_blocks"});
  check::CheckResult r = check::checkDeterminism(c, quick());
  EXPECT_NE(r.detail.find("two runs on 1 thread differ"), std::string::npos) << r.detail;
}

TEST(Broken, ThreadDependentEncodeFailsDeterminism) {
  ThreadDependentCodec c(makeCodec("int8"));
  expectVerdicts(c, "determinism", {"bytes_written", "roundtrip normal", "partial_blocks"});
  check::CheckResult r = check::checkDeterminism(c, quick());
  EXPECT_NE(r.detail.find("1 thread and 4 threads differ"), std::string::npos) << r.detail;
}

TEST(Broken, QuantizedOwnerInputFailsDecodeReduceEncode) {
  QuantizedSelfCodec c(makeCodec("int8"));
  std::vector<std::string> others = {"bytes_written", "determinism", "partial_blocks",
                                     "non_finite", "random_payloads"};
  expectVerdicts(c, "decode_reduce_encode", others);
}

TEST(Broken, ReadPastThePayloadFailsBoundedReads) {
  OverreadCodec c(makeCodec("int8"));
  expectVerdicts(c, "bounded_reads", {"bytes_written", "determinism", "decode_reduce_encode"});
  const check::CheckResult r = check::checkBoundedReads(c, quick());
  EXPECT_NE(r.detail.find("decode (payload): read past the end"), std::string::npos) << r.detail;
}

// non_finite holds a codec to COCCL_CODEC_CAP_NONFINITE only when it declares it.
TEST(Broken, LostNanFailsNonFiniteWhenDeclared) {
  NanDroppingCodec c(makeCodec("int8"), true);
  ASSERT_NE(c.capabilities() & COCCL_CODEC_CAP_NONFINITE, 0u);
  const check::CheckResult r = check::checkNonFinite(c, quick());
  EXPECT_FALSE(r.pass) << r.numbers;
  EXPECT_NE(r.detail.find("NaN lost"), std::string::npos) << r.detail;
}

TEST(Battery, NonFiniteUndeclaredChecksMemorySafetyOnly) {
  NanDroppingCodec c(makeCodec("int8"), false);
  const check::CheckResult r = check::checkNonFinite(c, quick());
  EXPECT_TRUE(r.pass) << r.detail;
  EXPECT_NE(r.numbers.find("not declared"), std::string::npos) << r.numbers;
  OverrunCodec o(makeCodec("int8"));  // guards still count without the capability
  EXPECT_FALSE(check::checkNonFinite(o, quick()).pass);
}

// A codec that refuses partial blocks (tah's default): every check runs whole-block counts and
// passes; partial_blocks checks the refusal itself.
TEST(Battery, RefusingPartialBlocksPassesOnWholeBlocks) {
  RefusingCodec c(makeCodec("int8"), RefusingCodec::kNone);
  const std::vector<check::CheckResult> rs = check::runBattery(c, quick());
  const std::string table = check::formatTable(c, rs);
  EXPECT_TRUE(check::allPassed(rs)) << table;
  const check::CheckResult* r = find(rs, "partial_blocks");
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r->numbers.find("refused (whole blocks of 128 only)"), std::string::npos) << table;
}

TEST(Broken, RefusalThatWritesFailsPartialBlocks) {
  RefusingCodec c(makeCodec("int8"), RefusingCodec::kWritesFirst);
  expectVerdicts(c, "partial_blocks", {"bytes_written", "determinism", "decode_reduce_encode"});
  const check::CheckResult r = check::checkPartialBlocks(c, quick());
  EXPECT_NE(r.detail.find("fp32 count 1: a refused operation wrote into its buffers"),
            std::string::npos)
      << r.detail;
}

TEST(Broken, RefusalWithTheWrongCodeFailsPartialBlocks) {
  RefusingCodec c(makeCodec("int8"), RefusingCodec::kWrongCode);
  expectVerdicts(c, "partial_blocks", {"bytes_written", "determinism", "decode_reduce_encode"});
  const check::CheckResult r = check::checkPartialBlocks(c, quick());
  EXPECT_NE(r.detail.find("encode: failed with result"), std::string::npos) << r.detail;
}

// Refusing a whole-block count fails partial_blocks, and every check that meets such a count
// names it.
TEST(Broken, RefusedWholeBlockFails) {
  RefusingCodec c(makeCodec("int8"), RefusingCodec::kOddBlocks);
  expectVerdicts(c, "partial_blocks", {"roundtrip normal"});
  const check::CheckResult r = check::checkPartialBlocks(c, quick());
  EXPECT_NE(r.detail.find("fp32 count 128 (whole blocks of 128): refused, but whole-block "
                          "counts must be taken"),
            std::string::npos)
      << r.detail;
  const std::vector<check::CheckResult> rs = check::runBattery(c, quick());
  const check::CheckResult* b = find(rs, "bytes_written");
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(b->pass);
  EXPECT_NE(b->detail.find("a whole-block count, which it must take"), std::string::npos)
      << b->detail;
}

// An empty manifest directory: the real-data row fails rather than passing silently.
TEST(Battery, MissingManifestFails) {
  CodecPtr c = makeCodec("int8");
  check::Options o = quick();
  o.manifest = "/nonexistent/tp_tensors_manifest.json";
  const std::vector<check::CheckResult> rs = check::runBattery(*c, o);
  const check::CheckResult* r = find(rs, "roundtrip real_data");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->pass);
}

}  // namespace
}  // namespace test
}  // namespace coccl
