#include "collectives/host/reduce.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "kernels/float_convert.h"
#include "kernels/fp8.h"

namespace coccl {
namespace {

// Storage type <-> compute type for each coccl data type.
template <cocclDataType_t DT>
struct Elem;
#define COCCL_INT_ELEM(DT, T, U)                              \
  template <>                                                 \
  struct Elem<DT> {                                           \
    using S = T;                                              \
    using C = U; /* unsigned: sums and products wrap */       \
    static C load(S v) { return static_cast<C>(v); }         \
    static S store(C v) { return static_cast<S>(v); }         \
  };
COCCL_INT_ELEM(cocclInt8, int8_t, uint8_t)
COCCL_INT_ELEM(cocclUint8, uint8_t, uint8_t)
COCCL_INT_ELEM(cocclInt32, int32_t, uint32_t)
COCCL_INT_ELEM(cocclUint32, uint32_t, uint32_t)
COCCL_INT_ELEM(cocclInt64, int64_t, uint64_t)
COCCL_INT_ELEM(cocclUint64, uint64_t, uint64_t)
#undef COCCL_INT_ELEM
template <>
struct Elem<cocclFloat32> {
  using S = float;
  using C = float;
  static C load(S v) { return v; }
  static S store(C v) { return v; }
};
template <>
struct Elem<cocclFloat64> {
  using S = double;
  using C = double;
  static C load(S v) { return v; }
  static S store(C v) { return v; }
};
template <>
struct Elem<cocclFloat16> {
  using S = uint16_t;
  using C = float;
  static C load(S v) { return kmath::fp16ToFloat(v); }
  static S store(C v) { return kmath::floatToFp16(v); }
};
template <>
struct Elem<cocclBfloat16> {
  using S = uint16_t;
  using C = float;
  static C load(S v) { return kmath::bf16ToFloat(v); }
  static S store(C v) { return kmath::floatToBf16(v); }
};
template <>
struct Elem<cocclFloat8e4m3> {
  using S = uint8_t;
  using C = float;
  static C load(S v) { return kmath::fp8ToFloat<kmath::Fp8E4M3>(v); }
  static S store(C v) { return kmath::floatToFp8Sat<kmath::Fp8E4M3>(v); }
};
template <>
struct Elem<cocclFloat8e5m2> {
  using S = uint8_t;
  using C = float;
  static C load(S v) { return kmath::fp8ToFloat<kmath::Fp8E5M2>(v); }
  static S store(C v) { return kmath::floatToFp8Sat<kmath::Fp8E5M2>(v); }
};

// Signed view of an unsigned compute type, for max/min/avg of signed integers.
template <cocclDataType_t DT>
using Signed = std::conditional_t<std::is_signed<typename Elem<DT>::S>::value,
                                  typename Elem<DT>::S, typename Elem<DT>::C>;

template <class C>
bool isNan(C v) {
  if constexpr (std::is_floating_point<C>::value) return std::isnan(v);
  return false;
}

template <cocclDataType_t DT, cocclRedOp_t OP>
typename Elem<DT>::C combine(typename Elem<DT>::C a, typename Elem<DT>::C b) {
  using C = typename Elem<DT>::C;
  using SC = Signed<DT>;
  if constexpr (OP == cocclSum || OP == cocclAvg) {
    return static_cast<C>(a + b);
  } else if constexpr (OP == cocclProd) {
    return static_cast<C>(a * b);
  } else if constexpr (OP == cocclMax) {
    if (isNan(a) || isNan(b)) return isNan(a) ? a : b;  // NaN propagates
    return static_cast<SC>(a) > static_cast<SC>(b) ? a : b;
  } else {
    if (isNan(a) || isNan(b)) return isNan(a) ? a : b;
    return static_cast<SC>(a) < static_cast<SC>(b) ? a : b;
  }
}

template <cocclDataType_t DT>
typename Elem<DT>::C divide(typename Elem<DT>::C v, int n) {
  using C = typename Elem<DT>::C;
  if constexpr (std::is_floating_point<C>::value) {
    return v / static_cast<C>(n);
  } else {
    using SC = Signed<DT>;
    return static_cast<C>(static_cast<SC>(v) / static_cast<SC>(n));
  }
}

constexpr size_t kTile = 1024;

template <cocclDataType_t DT, cocclRedOp_t OP>
void reduceTyped(void* out, const void* const* ins, int n, size_t count, int avgDivisor) {
  using E = Elem<DT>;
  using S = typename E::S;
  using C = typename E::C;
  C acc[kTile];
  S* o = static_cast<S*>(out);
  for (size_t base = 0; base < count; base += kTile) {
    size_t m = count - base < kTile ? count - base : kTile;
    const S* first = static_cast<const S*>(ins[0]) + base;
    for (size_t i = 0; i < m; ++i) acc[i] = E::load(first[i]);
    for (int r = 1; r < n; ++r) {
      const S* in = static_cast<const S*>(ins[r]) + base;
      for (size_t i = 0; i < m; ++i) acc[i] = combine<DT, OP>(acc[i], E::load(in[i]));
    }
    if constexpr (OP == cocclAvg)
      for (size_t i = 0; i < m; ++i) acc[i] = divide<DT>(acc[i], avgDivisor);
    for (size_t i = 0; i < m; ++i) o[base + i] = E::store(acc[i]);
  }
}

template <cocclDataType_t DT>
void reduceOp(void* out, const void* const* ins, int n, size_t count, cocclRedOp_t op, int d) {
  switch (op) {
    case cocclSum: return reduceTyped<DT, cocclSum>(out, ins, n, count, d);
    case cocclProd: return reduceTyped<DT, cocclProd>(out, ins, n, count, d);
    case cocclMax: return reduceTyped<DT, cocclMax>(out, ins, n, count, d);
    case cocclMin: return reduceTyped<DT, cocclMin>(out, ins, n, count, d);
    case cocclAvg: return reduceTyped<DT, cocclAvg>(out, ins, n, count, d);
    default: COCCL_THROW(cocclInvalidArgument, "invalid reduction op %d", static_cast<int>(op));
  }
}

}  // namespace

void reduceArrays(void* out, const void* const* ins, int n, size_t count, cocclDataType_t dt,
                  cocclRedOp_t op, int avgDivisor) {
  switch (dt) {
    case cocclInt8: return reduceOp<cocclInt8>(out, ins, n, count, op, avgDivisor);
    case cocclUint8: return reduceOp<cocclUint8>(out, ins, n, count, op, avgDivisor);
    case cocclInt32: return reduceOp<cocclInt32>(out, ins, n, count, op, avgDivisor);
    case cocclUint32: return reduceOp<cocclUint32>(out, ins, n, count, op, avgDivisor);
    case cocclInt64: return reduceOp<cocclInt64>(out, ins, n, count, op, avgDivisor);
    case cocclUint64: return reduceOp<cocclUint64>(out, ins, n, count, op, avgDivisor);
    case cocclFloat16: return reduceOp<cocclFloat16>(out, ins, n, count, op, avgDivisor);
    case cocclFloat32: return reduceOp<cocclFloat32>(out, ins, n, count, op, avgDivisor);
    case cocclFloat64: return reduceOp<cocclFloat64>(out, ins, n, count, op, avgDivisor);
    case cocclBfloat16: return reduceOp<cocclBfloat16>(out, ins, n, count, op, avgDivisor);
    case cocclFloat8e4m3: return reduceOp<cocclFloat8e4m3>(out, ins, n, count, op, avgDivisor);
    case cocclFloat8e5m2: return reduceOp<cocclFloat8e5m2>(out, ins, n, count, op, avgDivisor);
    default: COCCL_THROW(cocclInvalidArgument, "invalid data type %d", static_cast<int>(dt));
  }
}

void accumulateToFloat(const void* in, cocclDataType_t dt, size_t count, float* acc) {
  switch (dt) {
    case cocclFloat32: {
      const float* p = static_cast<const float*>(in);
      for (size_t i = 0; i < count; ++i) acc[i] += p[i];
      return;
    }
    case cocclFloat16: {
      const uint16_t* p = static_cast<const uint16_t*>(in);
      for (size_t i = 0; i < count; ++i) acc[i] += kmath::fp16ToFloat(p[i]);
      return;
    }
    case cocclBfloat16: {
      const uint16_t* p = static_cast<const uint16_t*>(in);
      for (size_t i = 0; i < count; ++i) acc[i] += kmath::bf16ToFloat(p[i]);
      return;
    }
    default:
      COCCL_THROW(cocclInternalError, "accumulateToFloat: unsupported type %s", dtypeName(dt));
  }
}

void convertFromFloat(const float* acc, size_t count, cocclDataType_t dt, void* out) {
  switch (dt) {
    case cocclFloat32:
      if (out != acc) std::memmove(out, acc, count * sizeof(float));
      return;
    case cocclFloat16: {
      uint16_t* p = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < count; ++i) p[i] = kmath::floatToFp16(acc[i]);
      return;
    }
    case cocclBfloat16: {
      uint16_t* p = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < count; ++i) p[i] = kmath::floatToBf16(acc[i]);
      return;
    }
    default:
      COCCL_THROW(cocclInternalError, "convertFromFloat: unsupported type %s", dtypeName(dt));
  }
}

void scaleFloats(float* acc, size_t count, float s) {
  for (size_t i = 0; i < count; ++i) acc[i] *= s;
}

}  // namespace coccl
