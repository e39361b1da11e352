// Which codec a collective call uses. Compression applies to AllReduce and ReduceScatter with
// SUM or AVG, and AllGather, on fp32/fp16/bf16, at or above compressMinBytes of input; every
// other op, type or size takes the exact path (never a silently different op).
#pragma once

#include <cstddef>
#include <string>

#include "codecs/codec.h"
#include "coccl.h"
#include "core/env.h"

namespace coccl {

enum class CollKind { AllReduce, ReduceScatter, AllGather };

struct PolicyConfig {
  std::string codec;  // default spec ("" or "none": uncompressed)
  std::string codecAllReduce, codecReduceScatter, codecAllGather;  // "" = use codec
  int64_t compressMinBytes = env_default::compressMinBytes;
};

class CodecPolicy {
 public:
  // Parses every spec up front (throws cocclInvalidArgument naming the bad spec).
  explicit CodecPolicy(const PolicyConfig& cfg);

  // The codec for this call, or nullptr for the exact path. `forced` (per-call choice) wins
  // over the policy and the size threshold, but not over type/op support.
  const Codec* select(CollKind kind, cocclDataType_t dt, cocclRedOp_t op, size_t bytes,
                      const Codec* forced) const;
  const Codec* codecFor(CollKind kind) const;
  static bool compressible(const Codec* c, CollKind kind, cocclDataType_t dt, cocclRedOp_t op);

 private:
  CodecPtr allReduce_, reduceScatter_, allGather_;
  int64_t minBytes_;
};

}  // namespace coccl
