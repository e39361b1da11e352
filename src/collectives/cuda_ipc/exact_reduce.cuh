// Exact (uncompressed) element-wise reduction on the device for every coccl data type and op,
// with the semantics of the host's reduceArrays (src/collectives/host/reduce.cc), bit for bit:
// inputs combined in the order given (first assigned, then op(acc, next)); half-precision and
// fp8 types through fp32 and rounded once (the shared kmath conversions); fp64 in fp64;
// integers exactly (sums and products wrap, max/min compare as the signed or unsigned type);
// NaN propagates through max/min (the first NaN operand wins); AVG divides by avgDiv (fp32 /
// fp64 division for floats, truncating signed/unsigned division for integers).
// The op is a runtime switch inside the element loop (uniform, cheap); the type a template.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "coccl.h"
#include "collectives/cuda_ipc/kernel_common.cuh"
#include "kernels/float_convert.h"
#include "kernels/fp8.h"

namespace coccl {
namespace dev {

template <cocclDataType_t DT>
struct DElem;

#define COCCL_DEV_INT_ELEM(DT, ST, CT)                                              \
  template <>                                                                      \
  struct DElem<DT> {                                                               \
    using S = ST;                                                                  \
    using C = CT;                                                                  \
    using SC = ST; /* compares and divides as the storage type's signedness */     \
    static constexpr bool kFloat = false;                                          \
    __device__ __forceinline__ static C load(S v) { return static_cast<C>(v); }    \
    __device__ __forceinline__ static S store(C v) { return static_cast<S>(v); }   \
  };
COCCL_DEV_INT_ELEM(cocclInt8, int8_t, uint8_t)
COCCL_DEV_INT_ELEM(cocclUint8, uint8_t, uint8_t)
COCCL_DEV_INT_ELEM(cocclInt32, int32_t, uint32_t)
COCCL_DEV_INT_ELEM(cocclUint32, uint32_t, uint32_t)
COCCL_DEV_INT_ELEM(cocclInt64, int64_t, uint64_t)
COCCL_DEV_INT_ELEM(cocclUint64, uint64_t, uint64_t)
#undef COCCL_DEV_INT_ELEM

#define COCCL_DEV_FLOAT_ELEM(DT, ST, CT, LOAD, STORE)                        \
  template <>                                                               \
  struct DElem<DT> {                                                        \
    using S = ST;                                                           \
    using C = CT;                                                           \
    using SC = CT;                                                          \
    static constexpr bool kFloat = true;                                    \
    __device__ __forceinline__ static C load(S v) { return LOAD; }          \
    __device__ __forceinline__ static S store(C v) { return STORE; }        \
  };
COCCL_DEV_FLOAT_ELEM(cocclFloat32, float, float, v, v)
COCCL_DEV_FLOAT_ELEM(cocclFloat64, double, double, v, v)
COCCL_DEV_FLOAT_ELEM(cocclFloat16, uint16_t, float, kmath::fp16ToFloat(v), kmath::floatToFp16(v))
COCCL_DEV_FLOAT_ELEM(cocclBfloat16, uint16_t, float, kmath::bf16ToFloat(v), kmath::floatToBf16(v))
COCCL_DEV_FLOAT_ELEM(cocclFloat8e4m3, uint8_t, float, kmath::fp8ToFloat<kmath::Fp8E4M3>(v),
                     kmath::floatToFp8Sat<kmath::Fp8E4M3>(v))
COCCL_DEV_FLOAT_ELEM(cocclFloat8e5m2, uint8_t, float, kmath::fp8ToFloat<kmath::Fp8E5M2>(v),
                     kmath::floatToFp8Sat<kmath::Fp8E5M2>(v))
#undef COCCL_DEV_FLOAT_ELEM

// Correctly rounded arithmetic that nvcc never contracts (the host compiles with
// -ffp-contract=off).
__device__ __forceinline__ float dAdd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double dAdd(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float dMul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double dMul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float dDiv(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double dDiv(double a, double b) { return __ddiv_rn(a, b); }
template <class T>
__device__ __forceinline__ T dAdd(T a, T b) { return static_cast<T>(a + b); }
template <class T>
__device__ __forceinline__ T dMul(T a, T b) { return static_cast<T>(a * b); }

template <class C>
__device__ __forceinline__ bool dIsNan(C v) {
  if constexpr (std::is_floating_point<C>::value) {
    return v != v;
  } else {
    return false;
  }
}

template <cocclDataType_t DT>
__device__ __forceinline__ typename DElem<DT>::C combine(typename DElem<DT>::C a,
                                                         typename DElem<DT>::C b, int op) {
  using E = DElem<DT>;
  using C = typename E::C;
  using SC = typename E::SC;
  switch (op) {
    case cocclProd:
      return dMul(a, b);
    case cocclMax:
      if constexpr (E::kFloat) {
        if (dIsNan(a) || dIsNan(b)) return dIsNan(a) ? a : b;
      }
      return static_cast<SC>(a) > static_cast<SC>(b) ? a : b;
    case cocclMin:
      if constexpr (E::kFloat) {
        if (dIsNan(a) || dIsNan(b)) return dIsNan(a) ? a : b;
      }
      return static_cast<SC>(a) < static_cast<SC>(b) ? a : b;
    default:  // sum, avg
      return static_cast<C>(dAdd(a, b));
  }
}

template <cocclDataType_t DT>
__device__ __forceinline__ typename DElem<DT>::C divideBy(typename DElem<DT>::C v, int n) {
  using E = DElem<DT>;
  using C = typename E::C;
  if constexpr (E::kFloat) {
    return dDiv(v, static_cast<C>(n));
  } else {
    using SC = typename E::SC;
    return static_cast<C>(static_cast<SC>(v) / static_cast<SC>(n));
  }
}

// out0[i] (and out1[i] when out1) = op over r of ins[r][i], i < n. `ins` holds p pointers
// (shared memory). Block-wide; 16-byte accesses when every pointer is 16-byte aligned.
template <cocclDataType_t DT>
__device__ void reduceExactT(const void* const* ins, int p, uint64_t n, int op, int avgDiv,
                             void* out0, void* out1) {
  using E = DElem<DT>;
  using S = typename E::S;
  using C = typename E::C;
  constexpr int V = 16 / static_cast<int>(sizeof(S));
  uintptr_t a = reinterpret_cast<uintptr_t>(out0) | reinterpret_cast<uintptr_t>(out1);
  for (int r = 0; r < p; ++r) a |= reinterpret_cast<uintptr_t>(ins[r]);
  const uint64_t t = static_cast<uint64_t>(tid()), nt = blockDim.x;
  uint64_t done = 0;
  if ((a & 15u) == 0) {
    const uint64_t nv = n / V;
    for (uint64_t i = t; i < nv; i += nt) {
      C acc[V];
      {
        uint4 raw = static_cast<const uint4*>(ins[0])[i];
        const S* s = reinterpret_cast<const S*>(&raw);
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] = E::load(s[v]);
      }
      for (int r = 1; r < p; ++r) {
        uint4 raw = static_cast<const uint4*>(ins[r])[i];
        const S* s = reinterpret_cast<const S*>(&raw);
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] = combine<DT>(acc[v], E::load(s[v]), op);
      }
      uint4 res;
      S* o = reinterpret_cast<S*>(&res);
#pragma unroll
      for (int v = 0; v < V; ++v)
        o[v] = E::store(op == cocclAvg ? divideBy<DT>(acc[v], avgDiv) : acc[v]);
      static_cast<uint4*>(out0)[i] = res;
      if (out1) static_cast<uint4*>(out1)[i] = res;
    }
    done = nv * V;
  }
  for (uint64_t i = done + t; i < n; i += nt) {
    C acc = E::load(static_cast<const S*>(ins[0])[i]);
    for (int r = 1; r < p; ++r) acc = combine<DT>(acc, E::load(static_cast<const S*>(ins[r])[i]), op);
    const S res = E::store(op == cocclAvg ? divideBy<DT>(acc, avgDiv) : acc);
    static_cast<S*>(out0)[i] = res;
    if (out1) static_cast<S*>(out1)[i] = res;
  }
}

static __device__ __noinline__ void reduceExact(int dtype, const void* const* ins, int p, uint64_t n,
                                         int op, int avgDiv, void* out0, void* out1) {
  switch (dtype) {
    case cocclInt8: return reduceExactT<cocclInt8>(ins, p, n, op, avgDiv, out0, out1);
    case cocclUint8: return reduceExactT<cocclUint8>(ins, p, n, op, avgDiv, out0, out1);
    case cocclInt32: return reduceExactT<cocclInt32>(ins, p, n, op, avgDiv, out0, out1);
    case cocclUint32: return reduceExactT<cocclUint32>(ins, p, n, op, avgDiv, out0, out1);
    case cocclInt64: return reduceExactT<cocclInt64>(ins, p, n, op, avgDiv, out0, out1);
    case cocclUint64: return reduceExactT<cocclUint64>(ins, p, n, op, avgDiv, out0, out1);
    case cocclFloat16: return reduceExactT<cocclFloat16>(ins, p, n, op, avgDiv, out0, out1);
    case cocclFloat32: return reduceExactT<cocclFloat32>(ins, p, n, op, avgDiv, out0, out1);
    case cocclFloat64: return reduceExactT<cocclFloat64>(ins, p, n, op, avgDiv, out0, out1);
    case cocclBfloat16: return reduceExactT<cocclBfloat16>(ins, p, n, op, avgDiv, out0, out1);
    case cocclFloat8e4m3: return reduceExactT<cocclFloat8e4m3>(ins, p, n, op, avgDiv, out0, out1);
    case cocclFloat8e5m2: return reduceExactT<cocclFloat8e5m2>(ins, p, n, op, avgDiv, out0, out1);
    default: return;
  }
}

}  // namespace dev
}  // namespace coccl
