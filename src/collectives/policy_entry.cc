#include "collectives/policy_entry.h"

#include "codecs/spec.h"
#include "core/error.h"

namespace coccl {

bool specMeansNone(const std::string& spec) {
  return spec.find_first_not_of(" \t") == std::string::npos || spec == "none";
}

PolicyEntry parsePolicyEntry(const std::string& spec, Coll kind) {
  PolicyEntry e;
  if (specMeansNone(spec)) return e;
  const codec_detail::ParsedSpec p = codec_detail::parseSpec(spec);
  if (p.name != "hier") {
    e.codec = makeCodec(spec);
    return e;
  }
  COCCL_CHECK_ARG(kind == Coll::AllReduce || kind == Coll::ReduceScatter,
                  "codec spec '%s': two-level (hier:) specs are for AllReduce and ReduceScatter",
                  codec_detail::quoted(spec).c_str());
  std::string intra, inter;
  for (const auto& kv : p.params) {
    if (kv.first == "intra") intra = kv.second;
    else if (kv.first == "inter") inter = kv.second;
    else
      COCCL_THROW(cocclInvalidArgument, "codec spec '%s': unknown key '%s' (hier takes intra, inter)",
                  codec_detail::quoted(spec).c_str(), codec_detail::quoted(kv.first).c_str());
  }
  COCCL_CHECK_ARG(!intra.empty() && !inter.empty(),
                  "codec spec '%s': hier needs intra=CODEC and inter=CODEC",
                  codec_detail::quoted(spec).c_str());
  auto level = [&](const std::string& which, const std::string& name) {
    try {
      return makeCodec(name);
    } catch (const Error& err) {
      COCCL_THROW(cocclInvalidArgument, "codec spec '%s': %s: %s",
                  codec_detail::quoted(spec).c_str(), which.c_str(), err.what());
    }
  };
  e.codec = level("intra", intra);
  e.inter = level("inter", inter);
  // Partial sums cross the node boundary as fp32 input of the inter codec, and every rank
  // decodes its payloads into the output type: its payload must not depend on the input type.
  for (const CodecPtr& c : {e.codec, e.inter}) {
    COCCL_CHECK_ARG(!c->lossless() && c->supportsType(cocclFloat32) &&
                        c->supportsOp(cocclSum) && c->supportsOp(cocclAvg),
                    "codec spec '%s': %s must be a lossy codec of fp32 input with SUM and AVG",
                    codec_detail::quoted(spec).c_str(), c->name());
    for (cocclDataType_t dt : {cocclFloat16, cocclBfloat16})
      COCCL_CHECK_ARG(!c->supportsType(dt) ||
                          c->encodedBytes(4096, dt) == c->encodedBytes(4096, cocclFloat32),
                      "codec spec '%s': %s's payload size depends on the input type",
                      codec_detail::quoted(spec).c_str(), c->name());
  }
  e.hier = "hier:intra=" + e.codec->spec() + ",inter=" + e.inter->spec();
  return e;
}

}  // namespace coccl
