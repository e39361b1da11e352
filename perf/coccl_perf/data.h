// Input generation, fp64 references and output checking of coccl_perf.
//
// Inputs are a pure function of (seed, rank, element index), so every rank can compute every
// other rank's input, and thus the reference, without communicating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "coccl.h"

namespace cocclperf {

enum class DataKind {
  Exact,   // small integers whose sums/products are exact in the type (exact paths)
  Normal,  // standard normal samples rounded to the type (compressed paths)
  Zero     // every element +0 (--data zero: what nccl-tests -c 0 times on fresh buffers)
};

struct Gen {
  uint64_t seed = 0;
  DataKind kind = DataKind::Exact;
  cocclDataType_t type = cocclFloat32;
  cocclRedOp_t op = cocclSum;
  int nSum = 1;  // ranks whose values get combined (nranks for reductions, else 1)
  // The input element i of `rank`, as the type stores it (an exact double).
  double value(int rank, size_t i) const;
};

// buf[i] = gen.value(rank, i) for i < count, stored as gen.type.
void fillInput(const Gen& gen, int rank, void* buf, size_t count);
// Writes a value no generator produces (NaN for floats) into buf[0..count).
void fillSentinel(cocclDataType_t type, void* buf, size_t count);

// Reference of a reduction over nranks of input element i (fp64, AVG divides by nranks).
double reduceRef(const Gen& gen, cocclRedOp_t op, int nranks, size_t i);

// ref(start, len, out): out[k] = reference of output element start + k.
using RefFn = std::function<void(size_t start, size_t len, double* out)>;

enum class Rule {
  Exact,  // out == ref
  Avg,    // floats: |out - ref| <= 1 ulp of the type at ref; integers: |out - ref| < 1
  Bound   // |out - ref| <= 0.15 * max|ref| over the element's 128-block + 1e-6
};
constexpr size_t kBoundBlock = 128;
constexpr double kBoundFactor = 0.15;
constexpr double kBoundFloor = 1e-6;

struct CheckResult {
  uint64_t wrong = 0;
  double errSq = 0;  // sum of (out - ref)^2
  double refSq = 0;  // sum of ref^2
  double maxAbs = 0;
  bool nonFinite = false;  // some |out - ref| was NaN or infinite
  void merge(const CheckResult& o);
};

// bound(start, len, out): out[k] = the largest allowed |out - ref| of output element start + k
// (the Bound rule from the codec's own error bound; colls.cc codecBound).
using BoundFn = std::function<void(size_t start, size_t len, double* out)>;

// Checks out[0..count) (of `type`) against ref; blocks of the Bound rule start at out[0]. With
// `bound` the Bound rule takes its per-element bounds instead of the 0.15 rule.
CheckResult checkOutput(cocclDataType_t type, const void* out, size_t count, const RefFn& ref,
                        Rule rule, const BoundFn* bound = nullptr);

// 64-bit hash of bytes (bitwise-identity checks).
uint64_t hashBytes(const void* p, size_t n);

uint64_t mix64(uint64_t x);

}  // namespace cocclperf
