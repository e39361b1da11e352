// One codec choice of the policy: a codec spec ("int8", "fp8_ash_ds:block=64", a plug-in's
// name...), "none", or a two-level spec "hier:intra=CODEC,inter=CODEC" (codec names with their
// default parameters; SDP4Bit's scheme, e.g. hier:intra=int8,inter=int4) for AllReduce and
// ReduceScatter: inside a node the intra codec, between nodes the inter codec, each level
// quantised once (collectives/host/hierarchical.cc; nodes: CommContext::ranksPerNode()).
#pragma once

#include <string>

#include "codecs/codec.h"
#include "collectives/request.h"

namespace coccl {

struct PolicyEntry {
  CodecPtr codec;    // the codec, or the intra-node codec of a two-level entry; null: exact
  CodecPtr inter;    // two-level: the inter-node codec
  std::string hier;  // two-level: "hier:intra=<spec>,inter=<spec>" (canonical)
  // The canonical spec: "none", the codec's spec, or `hier`.
  std::string spec() const { return !hier.empty() ? hier : codec ? codec->spec() : "none"; }
};

// Parses `spec` for collective `kind` ("", blanks or "none": exact). Throws
// cocclInvalidArgument with the spec parser's message (an unknown codec or key, a hier: spec for
// another collective than AllReduce / ReduceScatter, a hier level that is not a lossy fp32 codec
// of SUM and AVG whose payload size is the same for every input type).
PolicyEntry parsePolicyEntry(const std::string& spec, Coll kind);

// Whether `spec` asks for no codec: "", blanks only (COCCL_CODEC="   " means what "" means) or
// "none".
bool specMeansNone(const std::string& spec);

}  // namespace coccl
