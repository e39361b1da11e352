// Input generation, references and checking (see data.h).
#include "data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "dtype.h"

namespace cocclperf {
namespace {

double roundTo(cocclDataType_t t, double z) {
  switch (t) {
    case cocclFloat32: return static_cast<double>(static_cast<float>(z));
    case cocclFloat16: return halfToFloat(floatToHalf(static_cast<float>(z)));
    case cocclBfloat16: return bf16ToFloat(floatToBf16(static_cast<float>(z)));
    case cocclFloat8e4m3: return fp8ToDouble(doubleToFp8(z, false), false);
    case cocclFloat8e5m2: return fp8ToDouble(doubleToFp8(z, true), true);
    case cocclFloat64: return z;
    default: return std::nearbyint(z);
  }
}

// f(begin, end) over [0, count) on up to hardware_concurrency threads, 1M elements at least
// each (inputs of 1 GiB otherwise take seconds per size; every element is a pure function of
// (rank, index), so the split changes nothing).
template <class F>
void parallelRange(size_t count, F&& f) {
  constexpr size_t kMinPerThread = size_t{1} << 20;
  const size_t hw = std::max<size_t>(std::thread::hardware_concurrency(), 1);
  const size_t nt = std::min<size_t>(std::min<size_t>(hw, 32), count / kMinPerThread);
  if (nt <= 1) {
    f(size_t{0}, count);
    return;
  }
  std::vector<std::thread> ts;
  size_t t = 0;
  try {
    for (; t < nt; ++t) ts.emplace_back([&, t] { f(count * t / nt, count * (t + 1) / nt); });
  } catch (const std::system_error&) {  // no more threads: this one does the rest
  }
  for (size_t u = t; u < nt; ++u) f(count * u / nt, count * (u + 1) / nt);
  for (auto& th : ts) th.join();
}

template <typename T>
CheckResult checkTyped(const T* out, size_t count, const RefFn& ref, Rule rule,
                       cocclDataType_t type, const BoundFn* boundFn) {
  CheckResult c;
  double refs[kBoundBlock], bounds[kBoundBlock];
  const bool isFloat = typeInfo(type).isFloat;
  for (size_t s = 0; s < count; s += kBoundBlock) {
    const size_t len = std::min(kBoundBlock, count - s);
    ref(s, len, refs);
    if (rule == Rule::Bound && boundFn) (*boundFn)(s, len, bounds);
    double bound = 0;
    if (rule == Rule::Bound && !boundFn) {
      double bm = 0;
      for (size_t k = 0; k < len; ++k) bm = std::max(bm, std::fabs(refs[k]));
      bound = kBoundFactor * bm + kBoundFloor;
    }
    for (size_t k = 0; k < len; ++k) {
      const double o = toDouble(out[s + k]);
      const double r = refs[k];
      const double d = o - r;
      const double ad = std::fabs(d);
      c.refSq += r * r;
      c.errSq += d * d;
      if (std::isnan(ad)) {
        c.nonFinite = true;
      } else if (ad > c.maxAbs) {
        c.maxAbs = ad;
      }
      bool ok = false;
      switch (rule) {
        case Rule::Exact: ok = o == r; break;
        case Rule::Avg: ok = isFloat ? ad <= ulpOf(type, r) : ad < 1.0; break;
        case Rule::Bound: ok = ad <= (boundFn ? bounds[k] : bound); break;
      }
      if (!ok) ++c.wrong;
    }
  }
  return c;
}

}  // namespace

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double Gen::value(int rank, size_t i) const {
  if (kind == DataKind::Zero) return 0.0;
  const uint64_t h = mix64(seed ^ mix64(static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull +
                                        static_cast<uint64_t>(rank + 1) * 0xd1b54a32d192ed03ull));
  const TypeInfo& ti = typeInfo(type);
  if (kind == DataKind::Normal) {
    const uint64_t h2 = mix64(h ^ 0x5851f42d4c957f2dull);
    const double u1 = (static_cast<double>(h >> 11) + 0.5) * 0x1p-53;
    const double u2 = static_cast<double>(h2 >> 11) * 0x1p-53;
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    return roundTo(type, z);
  }
  const int n = std::max(nSum, 1);
  if (op == cocclProd) {
    // One rank contributes 2, another -1 (signed types), the rest 1: exact in every type.
    if (rank == static_cast<int>(i % n)) return 2;
    if (ti.isSigned && n > 1 && rank == static_cast<int>((i / n + 1) % n)) return -1;
    return 1;
  }
  const double k = std::min(std::floor(ti.exactLimit / n), 1000.0);
  if (k < 1) return rank == static_cast<int>(i % n) ? 1 : 0;
  const uint64_t kk = static_cast<uint64_t>(k);
  if (ti.isSigned) return static_cast<double>(static_cast<int64_t>(h % (2 * kk + 1))) - k;
  return static_cast<double>(h % (kk + 1));
}

void fillInput(const Gen& gen, int rank, void* buf, size_t count) {
  withType(gen.type, [&](auto tag) {
    using T = decltype(tag);
    T* b = static_cast<T*>(buf);
    parallelRange(count, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) b[i] = fromDouble<T>(gen.value(rank, i));
    });
  });
}

void fillSentinel(cocclDataType_t type, void* buf, size_t count) {
  withType(type, [&](auto tag) {
    using T = decltype(tag);
    T* b = static_cast<T*>(buf);
    const T s = sentinel<T>();
    for (size_t i = 0; i < count; ++i) b[i] = s;
  });
}

double reduceRef(const Gen& gen, cocclRedOp_t op, int nranks, size_t i) {
  double acc = gen.value(0, i);
  for (int r = 1; r < nranks; ++r) {
    const double v = gen.value(r, i);
    switch (op) {
      case cocclProd: acc *= v; break;
      case cocclMax: acc = std::max(acc, v); break;
      case cocclMin: acc = std::min(acc, v); break;
      default: acc += v; break;
    }
  }
  if (op == cocclAvg) acc /= nranks;
  return acc;
}

void CheckResult::merge(const CheckResult& o) {
  wrong += o.wrong;
  errSq += o.errSq;
  refSq += o.refSq;
  maxAbs = std::max(maxAbs, o.maxAbs);
  nonFinite = nonFinite || o.nonFinite;
}

CheckResult checkOutput(cocclDataType_t type, const void* out, size_t count, const RefFn& ref,
                        Rule rule, const BoundFn* bound) {
  return withType(type, [&](auto tag) {
    using T = decltype(tag);
    return checkTyped(static_cast<const T*>(out), count, ref, rule, type, bound);
  });
}

uint64_t hashBytes(const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  uint64_t h = 0x243f6a8885a308d3ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 32;
  }
  for (; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return mix64(h ^ n);
}

}  // namespace cocclperf
