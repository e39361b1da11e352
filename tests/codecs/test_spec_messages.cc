// Error messages about a codec spec stay short whatever the spec's length (a megabyte-long
// COCCL_CODEC must not become a megabyte-long message), and still name the bad part.
#include <gtest/gtest.h>

#include <string>

#include "codecs/codec.h"
#include "core/error.h"

namespace coccl {
namespace {

std::string errorOf(const std::string& spec) {
  try {
    makeCodec(spec);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), cocclInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "parsed: " << spec.substr(0, 80);
  return "";
}

TEST(SpecMessages, LongSpecsAreCutInMessages) {
  const std::string longName(1 << 20, 'x');
  std::string m = errorOf(longName);
  EXPECT_LT(m.size(), 400u) << m.substr(0, 400);
  EXPECT_NE(m.find("1048576 characters"), std::string::npos) << m.substr(0, 400);
  EXPECT_NE(m.find("unknown codec"), std::string::npos) << m.substr(0, 400);

  m = errorOf("int8:block=64," + std::string(1 << 20, 'k') + "=1");
  EXPECT_LT(m.size(), 400u) << m.substr(0, 400);
  EXPECT_NE(m.find("codec spec 'int8:block=64,kkk"), std::string::npos) << m.substr(0, 400);
}

// The explanation is not cut, only the spec and the values it echoes (found by a helper trying
// the API, 2026-12-06: "must be a number in [..] (got..." lost the value).
TEST(SpecMessages, TheBadValueIsShownWhole) {
  std::string m = errorOf("fp8_ash_ds:alpha_min=1e-300");
  EXPECT_NE(m.find("(got '1e-300')"), std::string::npos) << m;
  m = errorOf("int8:block=99999999999999999999");
  EXPECT_NE(m.find("(got '99999999999999999999')"), std::string::npos) << m;
  m = errorOf("int8:block=" + std::string(1 << 20, '9'));
  EXPECT_LT(m.size(), 600u) << m.substr(0, 600);
  EXPECT_NE(m.find("1048576 characters"), std::string::npos) << m.substr(0, 600);
  m = errorOf("int8:" + std::string(1 << 20, 'q') + "=1");
  EXPECT_LT(m.size(), 600u) << m.substr(0, 600);
}

TEST(SpecMessages, ShortSpecsAreQuotedWhole) {
  const std::string m = errorOf("int8:block=100");
  EXPECT_NE(m.find("codec spec 'int8:block=100'"), std::string::npos) << m;
}

}  // namespace
}  // namespace coccl
