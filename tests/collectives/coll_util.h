// Helpers for collective tests: typed element access through doubles, deterministic inputs
// whose reductions are exact in any order, exact references, guarded buffers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "coccl.h"

namespace coccl::test {

size_t elemSize(cocclDataType_t dt);
const char* typeName(cocclDataType_t dt);
bool isFloat(cocclDataType_t dt);
const char* opName(cocclRedOp_t op);

// Reads / writes element i of a typed buffer as a double (integers exactly; fp8/fp16/bf16
// through fp32 with round-to-nearest-even on store).
double getElem(cocclDataType_t dt, const void* buf, size_t i);
void setElem(cocclDataType_t dt, void* buf, size_t i, double v);

// Input of rank `rank` for a reduction `op`: small integers (or powers of two for PROD) so
// that the reduction is exact in every type and any order.
void fillExact(cocclDataType_t dt, cocclRedOp_t op, void* buf, size_t count, int rank, int salt);

// The expected result of op over the given per-rank inputs, element i, computed the way the
// library defines it (fp32 division for AVG of float types, truncating for integers), then
// stored into dt.
double expectedReduce(cocclDataType_t dt, cocclRedOp_t op, const std::vector<const void*>& ins,
                      size_t i);

// A byte buffer with guard zones before and after the payload. The payload is pre-filled with
// `fill` (e.g. NaN patterns) so an element the library never writes fails the check.
class Guarded {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kGuardByte = 0xA5;
  explicit Guarded(size_t bytes, uint8_t fill = 0xFF);
  void* data() { return bytes_ ? buf_.data() + kGuard : nullptr; }
  const void* data() const { return bytes_ ? buf_.data() + kGuard : nullptr; }
  size_t bytes() const { return bytes_; }
  bool guardsIntact() const;

 private:
  size_t bytes_;
  std::vector<uint8_t> buf_;
};

}  // namespace coccl::test
