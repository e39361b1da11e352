#include "collectives/collectives.h"

#include <cstdint>
#include <cstring>

#include "collectives/communicator.h"
#include "collectives/host/algorithms.h"
#include "collectives/host/reduce.h"
#include "core/error.h"
#include "core/log.h"

namespace coccl {
namespace {

bool useRing(const Communicator& c) {
  const std::string& a = c.config().algo;
  if (a == "ring") return true;
  if (a == "two-shot" || a == "direct") return false;
  return c.nranks() >= c.config().ringMinRanks;
}

void beginStats(Communicator& c, size_t logical, const Codec* codec, const char* algo) {
  CollStats& s = c.stats();
  s.logicalBytes = logical;
  s.wireBytesSent = 0;
  s.codec = codec ? codec->name() : "none";
  s.algorithm = algo;
}

}  // namespace

void allReduce(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
               cocclRedOp_t op, const Codec* forced) {
  const size_t bytes = count * dtypeSize(dt);
  const Codec* codec = c.policy().select(CollKind::AllReduce, dt, op, bytes, forced);
  Wire w(codec, dt, op, c.nranks());
  bool ring = useRing(c) && c.nranks() > 2;
  beginStats(c, bytes, codec, ring ? "ring" : "two-shot");
  COCCL_TRACE(kLogColl, "AllReduce count %zu %s op %d codec %s algo %s", count, dtypeName(dt),
              static_cast<int>(op), codec ? codec->name() : "none", c.stats().algorithm);
  auto shards = balancedShards(count, c.nranks(), w.align());
  if (ring)
    ringReduce(c, w, static_cast<const char*>(in), static_cast<char*>(out), shards, true);
  else
    twoShotReduce(c, w, static_cast<const char*>(in), static_cast<char*>(out), shards, true);
}

void reduceScatter(Communicator& c, const void* in, void* out, size_t recvcount,
                   cocclDataType_t dt, cocclRedOp_t op, const Codec* forced) {
  const size_t bytes = recvcount * c.nranks() * dtypeSize(dt);
  const Codec* codec = c.policy().select(CollKind::ReduceScatter, dt, op, bytes, forced);
  Wire w(codec, dt, op, c.nranks());
  bool ring = useRing(c) && c.nranks() > 2;
  beginStats(c, bytes, codec, ring ? "ring" : "two-shot");
  auto shards = equalShards(recvcount, c.nranks());
  if (ring)
    ringReduce(c, w, static_cast<const char*>(in), static_cast<char*>(out), shards, false);
  else
    twoShotReduce(c, w, static_cast<const char*>(in), static_cast<char*>(out), shards, false);
}

void allGather(Communicator& c, const void* in, void* out, size_t sendcount, cocclDataType_t dt,
               const Codec* forced) {
  const size_t bytes = sendcount * c.nranks() * dtypeSize(dt);
  const Codec* codec = c.policy().select(CollKind::AllGather, dt, cocclSum, bytes, forced);
  Wire w(codec, dt, cocclSum, c.nranks());
  bool ring = useRing(c) && c.nranks() > 2;
  beginStats(c, bytes, codec, ring ? "ring" : "direct");
  if (ring)
    ringAllGather(c, w, static_cast<const char*>(in), static_cast<char*>(out), sendcount);
  else
    directAllGather(c, w, static_cast<const char*>(in), static_cast<char*>(out), sendcount);
}

void broadcast(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
               int root) {
  const size_t bytes = count * dtypeSize(dt);
  beginStats(c, bytes, nullptr, c.nranks() <= 4 ? "direct" : "chain");
  broadcast(c, static_cast<const char*>(in), static_cast<char*>(out), bytes, root);
}

void reduce(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
            cocclRedOp_t op, int root) {
  beginStats(c, count * dtypeSize(dt), nullptr, "direct");
  reduceToRoot(c, static_cast<const char*>(in), static_cast<char*>(out), count, dt, op, root);
}

namespace {
bool overlaps(const P2POp& a, const P2POp& b) {
  auto x = reinterpret_cast<uintptr_t>(a.buf), y = reinterpret_cast<uintptr_t>(b.buf);
  return a.bytes && b.bytes && x < y + b.bytes && y < x + a.bytes;
}
}  // namespace

void pointToPoint(Communicator& c, const std::vector<P2POp>& ops) {
  std::vector<RequestPtr> reqs;
  reqs.reserve(ops.size());
  size_t sent = 0;
  // A send whose buffer a receive of the same group also writes (nccl-tests' in-place
  // sendrecv) is sent from a copy taken before anything is received.
  std::vector<PoolBuffer> copies;
  std::vector<const void*> src(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    src[i] = ops[i].buf;
    if (!ops[i].send) continue;
    for (const P2POp& o : ops) {
      if (o.send || !overlaps(ops[i], o)) continue;
      copies.push_back(c.pool().get(ops[i].bytes));
      std::memcpy(copies.back().data(), ops[i].buf, ops[i].bytes);
      src[i] = copies.back().data();
      break;
    }
  }
  // Receives first so that eager sends to ourselves find them posted.
  for (const P2POp& o : ops)
    if (!o.send) reqs.push_back(c.transport().irecv(o.peer, c.nextRecvTag(o.peer), o.buf, o.bytes));
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2POp& o = ops[i];
    if (!o.send) continue;
    reqs.push_back(c.transport().isend(o.peer, c.nextSendTag(o.peer), src[i], o.bytes));
    sent += o.bytes;
  }
  c.waiter().waitAll(reqs, "send/receive");
  CollStats& s = c.stats();
  s.logicalBytes = sent;
  s.wireBytesSent = sent;
  s.codec = "none";
  s.algorithm = "p2p";
}

}  // namespace coccl
