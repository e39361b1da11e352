#include "collectives/policy.h"

#include "codecs/spec.h"
#include "core/dtype.h"
#include "core/error.h"

namespace coccl {

CodecPolicy::Entry CodecPolicy::parse(const std::string& spec, CollKind kind) {
  Entry e;
  // "", blanks only, or "none": uncompressed (COCCL_CODEC="   " means what "" means).
  if (spec.find_first_not_of(" \t") == std::string::npos || spec == "none") return e;
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

CodecPolicy::CodecPolicy(const PolicyConfig& cfg) : minBytes_(cfg.compressMinBytes) {
  auto pick = [&](const std::string& own, CollKind kind) {
    return parse(own.empty() ? cfg.codec : own, kind);
  };
  // A two-level default applies to the reductions; AllGather then takes its intra codec.
  allReduce_ = pick(cfg.codecAllReduce, Coll::AllReduce);
  reduceScatter_ = pick(cfg.codecReduceScatter, Coll::ReduceScatter);
  if (cfg.codecAllGather.empty() && codec_detail::parseSpec(cfg.codec.empty() ? "none" : cfg.codec).name == "hier")
    allGather_.codec = reduceScatter_.codec ? reduceScatter_.codec : allReduce_.codec;
  else
    allGather_ = pick(cfg.codecAllGather, Coll::AllGather);
  sendRecv_ = parse(cfg.codecSendRecv, Coll::Send);
}

const CodecPolicy::Entry& CodecPolicy::entry(CollKind kind) const {
  switch (kind) {
    case CollKind::AllReduce: return allReduce_;
    case CollKind::ReduceScatter: return reduceScatter_;
    case CollKind::AllGather: return allGather_;
    case CollKind::Send:
    case CollKind::Recv: return sendRecv_;
    default: return none_;
  }
}

const Codec* CodecPolicy::codecFor(CollKind kind) const { return entry(kind).codec.get(); }
const Codec* CodecPolicy::interFor(CollKind kind) const { return entry(kind).inter.get(); }
const std::string& CodecPolicy::hierName(CollKind kind) const { return entry(kind).hier; }

bool CodecPolicy::compressible(const Codec* c, CollKind kind, cocclDataType_t dt,
                               cocclRedOp_t op) {
  if (!c || c->lossless()) return false;
  if (!c->supportsType(dt)) return false;
  const bool reduces = kind == CollKind::AllReduce || kind == CollKind::ReduceScatter;
  if (reduces && !c->supportsOp(op)) return false;
  return true;
}

const Codec* CodecPolicy::select(CollKind kind, cocclDataType_t dt, cocclRedOp_t op,
                                 size_t bytes, const Codec* forced) const {
  if (forced) return compressible(forced, kind, dt, op) ? forced : nullptr;
  const Entry& e = entry(kind);
  const Codec* c = e.codec.get();
  if (!compressible(c, kind, dt, op)) return nullptr;
  if (e.inter && !compressible(e.inter.get(), kind, dt, op)) return nullptr;
  if (static_cast<int64_t>(bytes) < minBytes_) return nullptr;
  // A codec that does not shrink this payload (e.g. 16-bit codes of bf16 input) only adds work.
  const size_t es = dtypeSize(dt);
  if (es && c->encodedBytes(bytes / es, dt) >= bytes) return nullptr;
  return c;
}

}  // namespace coccl
