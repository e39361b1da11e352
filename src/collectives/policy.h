// Which codec a collective call uses. Compression applies to AllReduce and ReduceScatter with
// SUM or AVG, and AllGather and Send/Recv, on fp32/fp16/bf16, at or above compressMinBytes of
// input; every other op, type or size takes the exact path (never a silently different op).
// Send and Recv share one entry (SENDRECV: codecSendRecv, which does not fall back to the
// default `codec`: lossy point-to-point is asked for by name), so that both ends of a message
// decide alike; the op is not looked at.
//
// A policy spec is a codec spec ("int8", "fp8_ash_ds:block=64", a plug-in's name...) or a
// two-level spec "hier:intra=CODEC,inter=CODEC" (codec names with their default parameters;
// SDP4Bit's scheme, e.g. hier:intra=int8,inter=int4) for AllReduce and ReduceScatter: inside a
// node the intra codec, between nodes the inter codec, each level quantised once
// (collectives/host/hierarchical.cc; nodes: CommContext::ranksPerNode()).
#pragma once

#include <cstddef>
#include <string>

#include "codecs/codec.h"
#include "coccl.h"
#include "collectives/request.h"
#include "comm/config.h"

namespace coccl {

// The collectives a codec applies to: AllReduce, ReduceScatter, AllGather, Send and Recv (one
// entry for both; others: exact).
using CollKind = Coll;

class CodecPolicy {
 public:
  // Parses every spec up front (throws cocclInvalidArgument naming the bad spec).
  explicit CodecPolicy(const PolicyConfig& cfg);

  // The codec for this call, or nullptr for the exact path. `forced` (per-call choice) wins
  // over the policy, the size threshold and the size check, but not over type/op support. The
  // policy's codec is skipped where its payload would not be smaller than the input. For a
  // two-level policy entry this is the intra-node codec; interFor() gives the other.
  const Codec* select(CollKind kind, cocclDataType_t dt, cocclRedOp_t op, size_t bytes,
                      const Codec* forced) const;
  const Codec* codecFor(CollKind kind) const;
  // The inter-node codec of a two-level entry ("hier:"), else nullptr.
  const Codec* interFor(CollKind kind) const;
  // "hier:intra=...,inter=..." of a two-level entry (for the statistics), else "".
  const std::string& hierName(CollKind kind) const;
  static bool compressible(const Codec* c, CollKind kind, cocclDataType_t dt, cocclRedOp_t op);

 private:
  struct Entry {
    CodecPtr codec;  // the codec, or the intra-node codec of a two-level entry
    CodecPtr inter;  // two-level: the inter-node codec
    std::string hier;
  };
  static Entry parse(const std::string& spec, CollKind kind);
  const Entry& entry(CollKind kind) const;
  Entry allReduce_, reduceScatter_, allGather_, sendRecv_, none_;
  int64_t minBytes_;
};

}  // namespace coccl
