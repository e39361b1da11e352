// The one dtype table (src/core/dtype.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "core/dtype.h"

namespace coccl {
namespace {

TEST(Dtype, SizesNamesAndTraitsOfEveryType) {
  struct Want {
    cocclDataType_t t;
    size_t size;
    const char* name;
    bool isFloat, compressible;
  };
  const Want want[] = {
      {cocclInt8, 1, "int8", false, false},       {cocclUint8, 1, "uint8", false, false},
      {cocclInt32, 4, "int32", false, false},     {cocclUint32, 4, "uint32", false, false},
      {cocclInt64, 8, "int64", false, false},     {cocclUint64, 8, "uint64", false, false},
      {cocclFloat16, 2, "half", true, true},      {cocclFloat32, 4, "float", true, true},
      {cocclFloat64, 8, "double", true, false},   {cocclBfloat16, 2, "bfloat16", true, true},
      {cocclFloat8e4m3, 1, "f8e4m3", true, false}, {cocclFloat8e5m2, 1, "f8e5m2", true, false},
  };
  ASSERT_EQ(sizeof(want) / sizeof(want[0]), static_cast<size_t>(cocclNumTypes));
  std::set<std::string> names;
  for (const Want& w : want) {
    EXPECT_TRUE(dtypeValid(w.t));
    EXPECT_EQ(dtypeSize(w.t), w.size) << w.name;
    EXPECT_STREQ(dtypeName(w.t), w.name);
    EXPECT_EQ(isFloatingType(w.t), w.isFloat) << w.name;
    EXPECT_EQ(isCompressibleType(w.t), w.compressible) << w.name;
    ASSERT_NE(dtypeInfo(w.t), nullptr);
    EXPECT_EQ(dtypeInfo(w.t)->type, w.t);
    names.insert(w.name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(cocclNumTypes)) << "names are unique";
  // Aliases of the enum share rows.
  EXPECT_STREQ(dtypeName(cocclHalf), "half");
  EXPECT_STREQ(dtypeName(cocclChar), "int8");
  EXPECT_EQ(dtypeSize(cocclDouble), 8u);
}

TEST(Dtype, InvalidValues) {
  for (int v : {-1, static_cast<int>(cocclNumTypes), 1000}) {
    auto t = static_cast<cocclDataType_t>(v);
    EXPECT_FALSE(dtypeValid(v));
    EXPECT_EQ(dtypeSize(t), 0u);
    EXPECT_STREQ(dtypeName(t), "invalid");
    EXPECT_FALSE(isFloatingType(t));
    EXPECT_FALSE(isCompressibleType(t));
    EXPECT_EQ(dtypeInfo(t), nullptr);
  }
}

// Usable in constant expressions (and so in the shim's and tools' static tables).
static_assert(dtypeSize(cocclBfloat16) == 2, "constexpr");
static_assert(isCompressibleType(cocclFloat32) && !isCompressibleType(cocclFloat64), "constexpr");

}  // namespace
}  // namespace coccl
