// Type table and scalar conversions of coccl_perf (see dtype.h).
#include "dtype.h"

#include "core/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

namespace cocclperf {
namespace {

// What the tool adds to coccl's type table (src/core/dtype.h: name, size, float, signed), in
// the same (enum, = nccl-tests') order.
struct NumericTraits {
  int mantBits;
  int minNormalExp;
  double exactLimit;
};
constexpr NumericTraits kNumeric[] = {
    {0, 0, 126},          // int8
    {0, 0, 254},          // uint8
    {0, 0, 1e6},          // int32
    {0, 0, 1e6},          // uint32
    {0, 0, 1e6},          // int64
    {0, 0, 1e6},          // uint64
    {10, -14, 2048},      // half
    {23, -126, 16777216.0},  // float
    {52, -1022, 9007199254740992.0},  // double
    {7, -126, 256},       // bfloat16
    {3, -6, 16},          // f8e4m3
    {2, -14, 8},          // f8e5m2
};
constexpr int kNumTypes = coccl::kNumDtypes;
static_assert(sizeof(kNumeric) / sizeof(kNumeric[0]) == kNumTypes, "one row per type");

struct TypeTable {
  TypeInfo rows[kNumTypes];
  TypeTable() {
    for (int i = 0; i < kNumTypes; ++i) {
      const coccl::DtypeInfo& d = coccl::kDtypes[i];
      rows[i] = {d.type,     d.name, d.size, d.isFloat, d.isSigned, kNumeric[i].mantBits,
                 kNumeric[i].minNormalExp, kNumeric[i].exactLimit};
    }
  }
};
const TypeTable kTable;
const TypeInfo (&kTypes)[kNumTypes] = kTable.rows;

struct Alias {
  const char* name;
  cocclDataType_t type;
};
const Alias kAliases[] = {
    {"char", cocclInt8},         {"i8", cocclInt8},          {"u8", cocclUint8},
    {"int", cocclInt32},         {"i32", cocclInt32},        {"uint", cocclUint32},
    {"u32", cocclUint32},        {"i64", cocclInt64},        {"u64", cocclUint64},
    {"float16", cocclFloat16},   {"fp16", cocclFloat16},     {"f16", cocclFloat16},
    {"float32", cocclFloat32},   {"fp32", cocclFloat32},     {"f32", cocclFloat32},
    {"float64", cocclFloat64},   {"fp64", cocclFloat64},     {"f64", cocclFloat64},
    {"bf16", cocclBfloat16},     {"bfloat", cocclBfloat16},  {"e4m3", cocclFloat8e4m3},
    {"fp8e4m3", cocclFloat8e4m3}, {"fp8_e4m3", cocclFloat8e4m3},
    {"float8e4m3", cocclFloat8e4m3}, {"e5m2", cocclFloat8e5m2},
    {"fp8e5m2", cocclFloat8e5m2}, {"fp8_e5m2", cocclFloat8e5m2},
    {"float8e5m2", cocclFloat8e5m2},
};

// Generic fp8 encoder (round to nearest even, saturating).
uint8_t encodeFp8(double v, bool e5m2) {
  if (std::isnan(v)) return 0x7f;
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const int mant = e5m2 ? 2 : 3;
  const int bias = e5m2 ? 15 : 7;
  const int emin = 1 - bias;
  const double maxv = e5m2 ? 57344.0 : 448.0;
  const uint8_t maxCode = e5m2 ? 0x7b : 0x7e;
  double a = std::fabs(v);
  if (a == 0) return sign;
  if (a >= maxv) return sign | maxCode;
  int e = 0;
  std::frexp(a, &e);
  const int ex = std::max(e - 1, emin);
  const double q = std::ldexp(1.0, ex - mant);
  const double r = std::nearbyint(a / q) * q;
  if (r >= maxv) return sign | maxCode;
  if (r < std::ldexp(1.0, emin)) {
    return sign | static_cast<uint8_t>(r / std::ldexp(1.0, emin - mant));
  }
  int e2 = 0;
  std::frexp(r, &e2);
  const int E = e2 - 1;
  const int m = static_cast<int>(r / std::ldexp(1.0, E - mant)) - (1 << mant);
  return sign | static_cast<uint8_t>(((E + bias) << mant) | m);
}

double decodeFp8(uint8_t b, bool e5m2) {
  const int mant = e5m2 ? 2 : 3;
  const int bias = e5m2 ? 15 : 7;
  const int expField = (b & 0x7f) >> mant;
  const int m = b & ((1 << mant) - 1);
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  if (e5m2 && expField == 31) return m == 0 ? sign * HUGE_VAL : std::nan("");
  if (!e5m2 && expField == 15 && m == 7) return std::nan("");
  if (expField == 0) return sign * std::ldexp(static_cast<double>(m), 1 - bias - mant);
  return sign * std::ldexp(static_cast<double>((1 << mant) | m), expField - bias - mant);
}

struct Fp8Tables {
  std::array<double, 256> decode[2];
  std::array<uint8_t, 129> smallInt[2];  // encodings of -64..64
  Fp8Tables() {
    for (int f = 0; f < 2; ++f) {
      for (int i = 0; i < 256; ++i) decode[f][i] = decodeFp8(static_cast<uint8_t>(i), f == 1);
      for (int i = -64; i <= 64; ++i) smallInt[f][i + 64] = encodeFp8(i, f == 1);
    }
  }
};
const Fp8Tables& fp8Tables() {
  static const Fp8Tables t;
  return t;
}

}  // namespace

const TypeInfo& typeInfo(cocclDataType_t t) {
  for (const TypeInfo& ti : kTypes)
    if (ti.type == t) return ti;
  return kTypes[7];
}

bool parseTypeName(const std::string& s, cocclDataType_t* t) {
  std::string l(s);
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const TypeInfo& ti : kTypes)
    if (l == ti.name) return *t = ti.type, true;
  for (const Alias& a : kAliases)
    if (l == a.name) return *t = a.type, true;
  return false;
}

const cocclDataType_t* allTypes(int* n) {
  static cocclDataType_t list[kNumTypes];
  for (int i = 0; i < kNumTypes; ++i) list[i] = kTypes[i].type;
  *n = kNumTypes;
  return list;
}

double ulpOf(cocclDataType_t t, double x) {
  const TypeInfo& ti = typeInfo(t);
  if (!ti.isFloat) return 1.0;
  x = std::fabs(x);
  int e = ti.minNormalExp;
  if (x > 0 && std::isfinite(x)) {
    int fe = 0;
    std::frexp(x, &fe);
    e = std::max(fe - 1, ti.minNormalExp);
  }
  return std::ldexp(1.0, e - ti.mantBits);
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00 | static_cast<uint16_t>((a >> 13) & 0x1ff);
  if (a >= 0x477ff000u) return sign | 0x7c00;  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {                        // below 2^-14: subnormal half
    float af;
    std::memcpy(&af, &a, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(af * 16777216.0f));
  }
  const uint32_t mant = a & 0x7fffffu;
  const uint32_t exp = (a >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  uint32_t bits = sign | (mant << 13);
  bits |= exp == 31 ? 0x7f800000u : ((exp - 15 + 127) << 23);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16ToFloat(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint8_t doubleToFp8(double v, bool e5m2) {
  if (v >= -64 && v <= 64 && v == std::floor(v))
    return fp8Tables().smallInt[e5m2 ? 1 : 0][static_cast<int>(v) + 64];
  return encodeFp8(v, e5m2);
}

double fp8ToDouble(uint8_t b, bool e5m2) { return fp8Tables().decode[e5m2 ? 1 : 0][b]; }

}  // namespace cocclperf
