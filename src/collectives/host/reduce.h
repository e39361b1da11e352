// Element-wise reduction on host memory for every coccl data type and op. Half-precision and
// fp8 types are converted to fp32, reduced, and rounded once at the end; fp64 in fp64;
// integers exactly (sums wrap modulo 2^bits). Inputs are combined in the order given, so the
// result is deterministic.
#pragma once

#include <cstddef>

#include "coccl.h"
#include "core/dtype.h"  // dtypeSize, dtypeName, dtypeValid, isFloatingType

namespace coccl {

// out[i] = op(ins[0][i], ins[1][i], ..., ins[n-1][i]) for i < count (AVG divides the sum by
// `avgDivisor`). out may alias any input exactly (same pointer); no partial overlap.
void reduceArrays(void* out, const void* const* ins, int n, size_t count, cocclDataType_t dt,
                  cocclRedOp_t op, int avgDivisor);

// acc[i] += (float)in[i] for fp32/fp16/bf16 input.
void accumulateToFloat(const void* in, cocclDataType_t dt, size_t count, float* acc);
// out[i] = round-to-nearest-even(acc[i]) in type dt (fp32/fp16/bf16).
void convertFromFloat(const float* acc, size_t count, cocclDataType_t dt, void* out);
// acc[i] *= s.
void scaleFloats(float* acc, size_t count, float s);

}  // namespace coccl
