// The one table of coccl's data types: for every cocclDataType_t its size in bytes, its
// canonical name and its traits. Header-only and self-contained (it needs only include/coccl.h),
// so that the libnccl.so.2 shim and the perf tools use it too (ncclDataType_t values equal
// cocclDataType_t values).
//
// Names are nccl-tests' spelling ("half", "float", "bfloat16", "f8e4m3", ...): what coccl_perf
// prints in its "type" column and what log lines and error messages say.
#pragma once

#include <cstddef>

#include "coccl.h"

namespace coccl {

struct DtypeInfo {
  cocclDataType_t type;
  const char* name;   // canonical (nccl-tests') name
  size_t size;        // bytes per element
  bool isFloat;       // a floating-point type (fp8 included)
  bool isSigned;      // floats count as signed
  bool compressible;  // a type the lossy codecs encode: fp32, fp16, bf16
};

// Indexed by the enum value (0 .. cocclNumTypes-1), in nccl-tests' order.
inline constexpr DtypeInfo kDtypes[] = {
    {cocclInt8, "int8", 1, false, true, false},
    {cocclUint8, "uint8", 1, false, false, false},
    {cocclInt32, "int32", 4, false, true, false},
    {cocclUint32, "uint32", 4, false, false, false},
    {cocclInt64, "int64", 8, false, true, false},
    {cocclUint64, "uint64", 8, false, false, false},
    {cocclFloat16, "half", 2, true, true, true},
    {cocclFloat32, "float", 4, true, true, true},
    {cocclFloat64, "double", 8, true, true, false},
    {cocclBfloat16, "bfloat16", 2, true, true, true},
    {cocclFloat8e4m3, "f8e4m3", 1, true, true, false},
    {cocclFloat8e5m2, "f8e5m2", 1, true, true, false},
};
inline constexpr int kNumDtypes = static_cast<int>(sizeof(kDtypes) / sizeof(kDtypes[0]));
static_assert(kNumDtypes == cocclNumTypes, "one row per cocclDataType_t");

// True for 0 .. cocclNumTypes-1.
constexpr bool dtypeValid(int dt) { return dt >= 0 && dt < kNumDtypes; }

// The row of dt, nullptr for an invalid value.
constexpr const DtypeInfo* dtypeInfo(cocclDataType_t dt) {
  return dtypeValid(static_cast<int>(dt)) ? &kDtypes[static_cast<int>(dt)] : nullptr;
}

// Bytes of one element of dt (0 for an invalid type).
constexpr size_t dtypeSize(cocclDataType_t dt) {
  return dtypeValid(static_cast<int>(dt)) ? kDtypes[static_cast<int>(dt)].size : 0;
}

// The canonical name ("invalid" for an invalid type).
constexpr const char* dtypeName(cocclDataType_t dt) {
  return dtypeValid(static_cast<int>(dt)) ? kDtypes[static_cast<int>(dt)].name : "invalid";
}

constexpr bool isFloatingType(cocclDataType_t dt) {
  return dtypeValid(static_cast<int>(dt)) && kDtypes[static_cast<int>(dt)].isFloat;
}

// fp32, fp16 or bf16: the types the lossy codecs encode and the compressed collectives take.
constexpr bool isCompressibleType(cocclDataType_t dt) {
  return dtypeValid(static_cast<int>(dt)) && kDtypes[static_cast<int>(dt)].compressible;
}

namespace dtype_check {
constexpr bool rowsInEnumOrder() {
  for (int i = 0; i < kNumDtypes; ++i)
    if (static_cast<int>(kDtypes[i].type) != i) return false;
  return true;
}
static_assert(rowsInEnumOrder(), "kDtypes[i].type == i");
}  // namespace dtype_check

}  // namespace coccl
