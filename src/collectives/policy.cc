#include "collectives/policy.h"

#include "core/dtype.h"

namespace coccl {
namespace {

// "", blanks only, or "none": uncompressed (COCCL_CODEC="   " means what "" means).
CodecPtr parseOrNull(const std::string& spec) {
  if (spec.find_first_not_of(" \t") == std::string::npos || spec == "none") return nullptr;
  return makeCodec(spec);
}

}  // namespace

CodecPolicy::CodecPolicy(const PolicyConfig& cfg) : minBytes_(cfg.compressMinBytes) {
  CodecPtr def = parseOrNull(cfg.codec);
  allReduce_ = cfg.codecAllReduce.empty() ? def : parseOrNull(cfg.codecAllReduce);
  reduceScatter_ = cfg.codecReduceScatter.empty() ? def : parseOrNull(cfg.codecReduceScatter);
  allGather_ = cfg.codecAllGather.empty() ? def : parseOrNull(cfg.codecAllGather);
}

const Codec* CodecPolicy::codecFor(CollKind kind) const {
  switch (kind) {
    case CollKind::AllReduce: return allReduce_.get();
    case CollKind::ReduceScatter: return reduceScatter_.get();
    case CollKind::AllGather: return allGather_.get();
    default: return nullptr;
  }
  return nullptr;
}

bool CodecPolicy::compressible(const Codec* c, CollKind kind, cocclDataType_t dt,
                               cocclRedOp_t op) {
  if (!c || c->lossless()) return false;
  if (!c->supportsType(dt)) return false;
  if (kind != CollKind::AllGather && !c->supportsOp(op)) return false;
  return true;
}

const Codec* CodecPolicy::select(CollKind kind, cocclDataType_t dt, cocclRedOp_t op,
                                 size_t bytes, const Codec* forced) const {
  if (forced) return compressible(forced, kind, dt, op) ? forced : nullptr;
  const Codec* c = codecFor(kind);
  if (!compressible(c, kind, dt, op)) return nullptr;
  if (static_cast<int64_t>(bytes) < minBytes_) return nullptr;
  // A codec that does not shrink this payload (e.g. 16-bit codes of bf16 input) only adds work.
  const size_t es = dtypeSize(dt);
  if (es && c->encodedBytes(bytes / es, dt) >= bytes) return nullptr;
  return c;
}

}  // namespace coccl
