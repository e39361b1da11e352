#include "collectives/host/host_executor.h"

#include <algorithm>
#include <cstring>

#include "collectives/host/agree_call.h"
#include "collectives/host/algorithms.h"
#include "collectives/host/reduce.h"
#include "core/error.h"
#include "core/log.h"

namespace coccl {
namespace {
constexpr uint64_t kSeqBits = 22;
constexpr uint64_t kSubBits = 24;
constexpr uint64_t kP2pSeqMask = (uint64_t{1} << (kSeqBits + kSubBits)) - 1;
enum class TagKind : uint64_t { Collective = 0 };  // 1..3: HostExecutor::P2PPart

uint64_t kindBits(TagKind k) { return static_cast<uint64_t>(k) << (kSeqBits + kSubBits); }
}  // namespace

HostExecutor::HostExecutor(CommContext& ctx) : ctx_(ctx) {
  transport_ = makeUcxTransport(ctx.bootstrap(), ctx.topology());
  waiter_ = std::make_unique<Waiter>(*transport_, ctx.bootstrap(), ctx.abortFlag(),
                                     ctx.config().timeoutMs);
  sendSeq_.assign(static_cast<size_t>(ctx.nranks()), 0);
  recvSeq_.assign(static_cast<size_t>(ctx.nranks()), 0);
}

HostExecutor::~HostExecutor() {
  waiter_.reset();
  if (transport_) transport_->close();
  transport_.reset();
}

uint64_t HostExecutor::nextCollectiveTag() {
  // Wraps before 2^22 - 2 and 2^22 - 1, the agreement's sequence values.
  uint64_t seq = collSeq_++ % ((uint64_t{1} << kSeqBits) - 2);
  return kindBits(TagKind::Collective) | (seq << kSubBits);
}

uint64_t HostExecutor::agreeEagerTag() {
  return kindBits(TagKind::Collective) | (((uint64_t{1} << kSeqBits) - 2) << kSubBits);
}

uint64_t HostExecutor::callDescTag() {
  return kindBits(TagKind::Collective) | (((uint64_t{1} << kSeqBits) - 1) << kSubBits);
}

uint64_t HostExecutor::nextSendSeq(int peer) { return sendSeq_[static_cast<size_t>(peer)]++; }

uint64_t HostExecutor::nextRecvSeq(int peer) { return recvSeq_[static_cast<size_t>(peer)]++; }

uint64_t HostExecutor::p2pTag(P2PPart part, uint64_t seq) {
  return (static_cast<uint64_t>(part) << (kSeqBits + kSubBits)) | (seq & kP2pSeqMask);
}

bool HostExecutor::useRing() const {
  if (nranks() <= 2) return false;
  const std::string& a = config().algo;
  if (a == "ring") return true;
  if (a == "two-shot" || a == "direct" || a == "one-shot") return false;
  return nranks() >= config().ringMinRanks;
}

void HostExecutor::run(const CollRequest& r, CollStats& stats) {
  stats_ = &stats;
  stats.wireBytesSent = 0;
  // The call's agreement (agree_call.h) throws cocclInvalidUsage, before anything reaches
  // recvbuff, when the ranks' calls differ; two-shot runs it with its first messages.
  CallAgreement agree(*this, r);
  const int L = ctx_.ranksPerNode();
  const bool hier = r.codec && r.interCodec && L > 1 && L < nranks();
  // COCCL_ALGO=one-shot: compressed AllReduce only (exact wires and the other collectives keep
  // two-shot / direct; `auto` never picks it on host buffers).
  const bool oneShot =
      r.coll == Coll::AllReduce && r.codec && !hier && config().algo == "one-shot";
  const bool twoShot = (r.coll == Coll::AllReduce || r.coll == Coll::ReduceScatter) && !hier &&
                       !oneShot && !useRing();
  if (!twoShot) {
    agree.start();
    agree.finish();
  }
  if (!r.count) {
    if (twoShot) {
      agree.start();
      agree.finish();
    }
    return;
  }
  const auto* in = static_cast<const char*>(r.in);
  auto* out = static_cast<char*>(r.out);
  const bool ring = useRing();
  switch (r.coll) {
    case Coll::AllReduce:
    case Coll::ReduceScatter: {
      const bool all = r.coll == Coll::AllReduce;
      if (hier) {
        stats.algorithm = "hierarchical";
        const size_t align = std::max(r.codec->blockElems(), r.interCodec->blockElems());
        const auto shards =
            all ? balancedShards(r.count, nranks(), align) : equalShards(r.count, nranks());
        hierReduce(*this, *r.codec, *r.interCodec, r.dt, r.op, in, out, shards, all, L);
        break;
      }
      // One level only (one node, or one rank per node): its codec, flat.
      const Wire flat(r.codec && r.interCodec && L == 1 ? r.interCodec : r.codec, r.dt, r.op,
                      nranks());
      stats.algorithm = oneShot ? "one-shot" : ring ? "ring" : "two-shot";
      COCCL_TRACE(kLogColl, "%s count %zu %s op %d codec %s algo %s", collName(r.coll), r.count,
                  dtypeName(r.dt), static_cast<int>(r.op), stats.codec, stats.algorithm);
      const auto shards =
          all ? balancedShards(r.count, nranks(), flat.align()) : equalShards(r.count, nranks());
      if (oneShot)
        oneShotAllReduce(*this, flat, in, out, r.count);
      else if (ring)
        ringReduce(*this, flat, in, out, shards, all);
      else
        twoShotReduce(*this, flat, in, out, shards, all, agree);
      break;
    }
    case Coll::AllGather: {
      const Wire w(r.codec, r.dt, cocclSum, nranks());
      stats.algorithm = ring ? "ring" : "direct";
      if (ring)
        ringAllGather(*this, w, in, out, r.count);
      else
        directAllGather(*this, w, in, out, r.count);
      break;
    }
    case Coll::Broadcast:
      stats.algorithm = nranks() <= 4 ? "direct" : "chain";
      broadcast(*this, in, out, r.count * dtypeSize(r.dt), r.root);
      break;
    case Coll::Reduce:
      stats.algorithm = "direct";
      reduceToRoot(*this, in, out, r.count, r.dt, r.op, r.root);
      break;
    case Coll::Send:
    case Coll::Recv:
      COCCL_THROW(cocclInternalError, "host executor: Send/Recv go through runP2P");
  }
}

void HostExecutor::runP2P(const std::vector<CollRequest>& ops, CollStats& stats) {
  stats_ = &stats;
  stats.wireBytesSent = 0;
  stats.algorithm = "p2p";
  hostSendRecv(*this, ops);
}

}  // namespace coccl
