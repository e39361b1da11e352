// Which codec a collective call uses. Compression applies to AllReduce and ReduceScatter with
// SUM or AVG, and AllGather, on fp32/fp16/bf16, at or above compressMinBytes of input; every
// other op, type or size takes the exact path (never a silently different op).
#pragma once

#include <cstddef>
#include <string>

#include "codecs/codec.h"
#include "coccl.h"
#include "collectives/request.h"
#include "comm/config.h"

namespace coccl {

// The collectives a codec applies to: AllReduce, ReduceScatter, AllGather (others: exact).
using CollKind = Coll;

class CodecPolicy {
 public:
  // Parses every spec up front (throws cocclInvalidArgument naming the bad spec).
  explicit CodecPolicy(const PolicyConfig& cfg);

  // The codec for this call, or nullptr for the exact path. `forced` (per-call choice) wins
  // over the policy, the size threshold and the size check, but not over type/op support. The
  // policy's codec is skipped where its payload would not be smaller than the input.
  const Codec* select(CollKind kind, cocclDataType_t dt, cocclRedOp_t op, size_t bytes,
                      const Codec* forced) const;
  const Codec* codecFor(CollKind kind) const;
  static bool compressible(const Codec* c, CollKind kind, cocclDataType_t dt, cocclRedOp_t op);

 private:
  CodecPtr allReduce_, reduceScatter_, allGather_;
  int64_t minBytes_;
};

}  // namespace coccl
