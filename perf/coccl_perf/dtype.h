// Data types as coccl_perf sees them: names (nccl-tests' spelling, from coccl's one type table
// src/core/dtype.h, plus aliases), sizes, and element conversions to and from double. The tool
// keeps its own converters so that it needs nothing from coccl but the public API (and that
// header-only table). Narrow float types round to nearest even; fp8 saturates
// to the largest finite value (like __NV_SATFINITE); half overflows to infinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "coccl.h"

namespace cocclperf {

struct TypeInfo {
  cocclDataType_t type;
  const char* name;   // nccl-tests' name, printed in the "type" column
  size_t size;        // bytes per element
  bool isFloat;
  bool isSigned;      // floats count as signed
  int mantBits;       // explicit mantissa bits (floats)
  int minNormalExp;   // exponent of the smallest normal number (floats)
  double exactLimit;  // every integer of magnitude <= this is exact in the type (and its sums)
};

const TypeInfo& typeInfo(cocclDataType_t t);
// Parses a type name or alias ("float", "fp32", "bf16", "char", "e4m3", ...). False if unknown.
bool parseTypeName(const std::string& s, cocclDataType_t* t);
// Every type, in nccl-tests' order.
const cocclDataType_t* allTypes(int* n);

// Unit in the last place of |x| in type t (floats; 1 for integer types).
double ulpOf(cocclDataType_t t, double x);

// ---- scalar conversions ---------------------------------------------------------------------
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t b);
uint8_t doubleToFp8(double v, bool e5m2);
double fp8ToDouble(uint8_t b, bool e5m2);

// Storage wrappers so that one template handles every type.
struct Half { uint16_t bits; };
struct Bf16 { uint16_t bits; };
struct F8E4M3 { uint8_t bits; };
struct F8E5M2 { uint8_t bits; };

template <typename T>
inline double toDouble(T v) {
  if constexpr (std::is_same_v<T, Half>) return halfToFloat(v.bits);
  else if constexpr (std::is_same_v<T, Bf16>) return bf16ToFloat(v.bits);
  else if constexpr (std::is_same_v<T, F8E4M3>) return fp8ToDouble(v.bits, false);
  else if constexpr (std::is_same_v<T, F8E5M2>) return fp8ToDouble(v.bits, true);
  else return static_cast<double>(v);
}

// For integer T the value must be an integer in range (the generators guarantee it).
template <typename T>
inline T fromDouble(double v) {
  if constexpr (std::is_same_v<T, Half>) return Half{floatToHalf(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, Bf16>) return Bf16{floatToBf16(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, F8E4M3>) return F8E4M3{doubleToFp8(v, false)};
  else if constexpr (std::is_same_v<T, F8E5M2>) return F8E5M2{doubleToFp8(v, true)};
  else return static_cast<T>(v);
}

// A value no generator produces, written into outputs before a checked call so that elements
// the collective did not write count as wrong: NaN for floats, the type's minimum (signed) or
// maximum (unsigned) for integers.
template <typename T>
inline T sentinel() {
  if constexpr (std::is_same_v<T, Half>) return Half{0x7e00};
  else if constexpr (std::is_same_v<T, Bf16>) return Bf16{0x7fc0};
  else if constexpr (std::is_same_v<T, F8E4M3>) return F8E4M3{0x7f};
  else if constexpr (std::is_same_v<T, F8E5M2>) return F8E5M2{0x7f};
  else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(__builtin_nan(""));
  else if constexpr (std::is_signed_v<T>) return std::numeric_limits<T>::min();
  else return std::numeric_limits<T>::max();
}

// Calls f(T{}) with T the storage type of t (a generic lambda taking `auto`).
template <typename F>
decltype(auto) withType(cocclDataType_t t, F&& f) {
  switch (t) {
    case cocclInt8: return f(int8_t{});
    case cocclUint8: return f(uint8_t{});
    case cocclInt32: return f(int32_t{});
    case cocclUint32: return f(uint32_t{});
    case cocclInt64: return f(int64_t{});
    case cocclUint64: return f(uint64_t{});
    case cocclFloat16: return f(Half{});
    case cocclFloat32: return f(float{});
    case cocclFloat64: return f(double{});
    case cocclBfloat16: return f(Bf16{});
    case cocclFloat8e4m3: return f(F8E4M3{});
    case cocclFloat8e5m2: return f(F8E5M2{});
    default: break;
  }
  return f(float{});
}

}  // namespace cocclperf
