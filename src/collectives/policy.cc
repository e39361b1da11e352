#include "collectives/policy.h"

#include "codecs/spec.h"
#include "core/dtype.h"
#include "core/error.h"

namespace coccl {
namespace {

unsigned kindBit(CollKind kind) {
  switch (kind) {
    case CollKind::AllReduce: return kPolicyAllReduce;
    case CollKind::ReduceScatter: return kPolicyReduceScatter;
    case CollKind::AllGather: return kPolicyAllGather;
    case CollKind::Send:
    case CollKind::Recv: return kPolicySendRecv;
    default: return 0;
  }
}

}  // namespace

CodecPolicy::CodecPolicy(const PolicyConfig& cfg) : CodecPolicy(cfg, nullptr, CommFacts{}) {}

CodecPolicy::CodecPolicy(const PolicyConfig& cfg, const PolicyFile* file, const CommFacts& comm)
    : worldRanks_(comm.worldRanks) {
  if (file)
    for (const PolicyRule& r : file->rules)
      if (r.matchesComm(comm, file->path))
        rules_.push_back(Rule{"policy file " + file->path + " line " + std::to_string(r.line), r,
                              r.minBytes >= 0 ? r.minBytes : cfg.compressMinBytes});
  // The default rule: one entry per collective.
  auto add = [&](unsigned bit, PolicyEntry e) {
    Rule d{"default", PolicyRule{}, cfg.compressMinBytes};
    d.match.colls = bit;
    d.match.entry = std::move(e);
    rules_.push_back(std::move(d));
  };
  auto pick = [&](const std::string& own, CollKind kind) {
    return parsePolicyEntry(own.empty() ? cfg.codec : own, kind);
  };
  PolicyEntry ar = pick(cfg.codecAllReduce, Coll::AllReduce);
  PolicyEntry rs = pick(cfg.codecReduceScatter, Coll::ReduceScatter);
  // A two-level default applies to the reductions; AllGather then takes its intra codec.
  PolicyEntry ag;
  if (cfg.codecAllGather.empty() && !specMeansNone(cfg.codec) &&
      codec_detail::parseSpec(cfg.codec).name == "hier")
    ag.codec = rs.codec ? rs.codec : ar.codec;
  else
    ag = pick(cfg.codecAllGather, Coll::AllGather);
  add(kPolicyAllReduce, std::move(ar));
  add(kPolicyReduceScatter, std::move(rs));
  add(kPolicyAllGather, std::move(ag));
  add(kPolicySendRecv, parsePolicyEntry(cfg.codecSendRecv, Coll::Send));
}

bool CodecPolicy::compressible(const Codec* c, CollKind kind, cocclDataType_t dt,
                               cocclRedOp_t op) {
  if (!c || c->lossless()) return false;
  if (!c->supportsType(dt)) return false;
  const bool reduces = kind == CollKind::AllReduce || kind == CollKind::ReduceScatter;
  if (reduces && !c->supportsOp(op)) return false;
  return true;
}

CodecPolicy::Choice CodecPolicy::choose(CollKind kind, cocclDataType_t dt, cocclRedOp_t op,
                                        size_t bytes, size_t count, const Codec* forced,
                                        uint64_t callNo, P2PDir dir) const {
  if (forced) {
    if (forcedRefuses(forced, kind, dt, op, count))
      COCCL_THROW(cocclInvalidArgument, "%s", countRefusal(*forced, count, dt).c_str());
    if (!compressible(forced, kind, dt, op)) return Choice{};
    return Choice{forced, nullptr, forced->name()};
  }
  const unsigned bit = kindBit(kind);
  const int t = static_cast<int>(dt);
  if (!bit || !dtypeValid(t)) return Choice{};
  const uint64_t b = bytes;
  for (const Rule& r : rules_) {
    const PolicyRule& m = r.match;
    if (!(m.colls & bit) || !(m.dtypes >> t & 1u) || b < m.bytesFrom || b >= m.bytesBelow) continue;
    if (m.direction != P2PDir::Any && dir != P2PDir::Any && dir != m.direction) continue;
    // The first match decides, also where it leaves the call exact (and says by whom).
    Choice exact;
    exact.exact = m.exact;
    const PolicyEntry& e = m.entry;
    const Codec* c = e.codec.get();
    if (!compressible(c, kind, dt, op)) return exact;
    if (e.inter && !compressible(e.inter.get(), kind, dt, op)) return exact;
    if (static_cast<int64_t>(bytes) < r.minBytes) return exact;
    if (callNo < m.warmupCalls) return exact;  // the rule's uncompressed warm-up
    // A codec that does not shrink this payload (e.g. 16-bit codes of bf16 input) only adds
    // work.
    const size_t es = dtypeSize(dt);
    if (es && c->encodedBytes(bytes / es, dt) >= bytes) return exact;
    // A codec that does not take this count (e.g. tah and a count that is not whole rows).
    if (refusesCount(*c, count, dt)) return exact;
    // A two-level entry serves AllGather (and Send/Recv) with its intra codec alone.
    const bool twoLevel = e.inter && (kind == CollKind::AllReduce || kind == CollKind::ReduceScatter);
    return Choice{c, twoLevel ? e.inter.get() : nullptr, twoLevel ? e.hier.c_str() : c->name(),
                  m.exact, m.delta};
  }
  return Choice{};
}

bool CodecPolicy::asksForNcclExact() const {
  for (const Rule& r : rules_)
    if (r.match.exact == ExactPath::Nccl) return true;
  return false;
}

std::vector<std::string> CodecPolicy::describe() const {
  std::vector<std::string> out;
  for (const Rule& r : rules_)
    out.push_back(r.source + ": " + r.match.callText() + ": " + r.match.entry.spec() +
                  (r.match.entry.codec ? " from " + bytesText(static_cast<uint64_t>(r.minBytes))
                                       : std::string()) +
                  (r.match.exact != ExactPath::Default
                       ? std::string(" exact on ") + exactPathName(r.match.exact)
                       : std::string()) +
                  (r.match.delta ? " delta" : "") +
                  (r.match.warmupCalls && r.match.entry.codec
                       ? " after " + std::to_string(r.match.warmupCalls) + " exact calls"
                       : std::string()));
  return out;
}

}  // namespace coccl
