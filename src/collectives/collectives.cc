#include "collectives/collectives.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "collectives/communicator.h"
#include "collectives/device/device_comm.h"
#include "collectives/device/memtype.h"
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

// The device path when the call's buffers are device memory (nullptrs ignored); nullptr for
// host buffers.
DeviceComm* deviceFor(Communicator& c, const char* what, std::initializer_list<const void*> ptrs) {
  bool dev = false, host = false;
  for (const void* p : ptrs) {
    if (!p) continue;
    if (memKind(p) == MemKind::Device)
      dev = true;
    else
      host = true;
  }
  if (!dev) return nullptr;
  COCCL_CHECK_ARG(!host, "%s: buffers are partly host and partly device memory; use one kind",
                  what);
  DeviceComm* d = c.device();
  COCCL_CHECK_USAGE(d && d->usable(), "%s: device buffers, but the device path is off: %s", what,
                    d ? d->reason().c_str() : "this coccl was built without CUDA");
  return d;
}

}  // namespace

void allReduce(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
               cocclRedOp_t op, const Codec* forced, cocclStream_t stream) {
  const size_t bytes = count * dtypeSize(dt);
  const Codec* codec = c.policy().select(CollKind::AllReduce, dt, op, bytes, forced);
  if (DeviceComm* d = deviceFor(c, "AllReduce", {in, out})) {
    d->allReduce(in, out, count, dt, op, codec, stream, c.stats());
    return;
  }
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
                   cocclDataType_t dt, cocclRedOp_t op, const Codec* forced,
                   cocclStream_t stream) {
  const size_t bytes = recvcount * c.nranks() * dtypeSize(dt);
  const Codec* codec = c.policy().select(CollKind::ReduceScatter, dt, op, bytes, forced);
  if (DeviceComm* d = deviceFor(c, "ReduceScatter", {in, out})) {
    d->reduceScatter(in, out, recvcount, dt, op, codec, stream, c.stats());
    return;
  }
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
               const Codec* forced, cocclStream_t stream) {
  const size_t bytes = sendcount * c.nranks() * dtypeSize(dt);
  const Codec* codec = c.policy().select(CollKind::AllGather, dt, cocclSum, bytes, forced);
  if (DeviceComm* d = deviceFor(c, "AllGather", {in, out})) {
    d->allGather(in, out, sendcount, dt, codec, stream, c.stats());
    return;
  }
  Wire w(codec, dt, cocclSum, c.nranks());
  bool ring = useRing(c) && c.nranks() > 2;
  beginStats(c, bytes, codec, ring ? "ring" : "direct");
  if (ring)
    ringAllGather(c, w, static_cast<const char*>(in), static_cast<char*>(out), sendcount);
  else
    directAllGather(c, w, static_cast<const char*>(in), static_cast<char*>(out), sendcount);
}

void broadcast(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
               int root, cocclStream_t stream) {
  const size_t bytes = count * dtypeSize(dt);
  if (DeviceComm* d = deviceFor(c, "Broadcast", {c.rank() == root ? in : nullptr, out})) {
    d->broadcast(in, out, count, dt, root, stream, c.stats());
    return;
  }
  beginStats(c, bytes, nullptr, c.nranks() <= 4 ? "direct" : "chain");
  broadcast(c, static_cast<const char*>(in), static_cast<char*>(out), bytes, root);
}

void reduce(Communicator& c, const void* in, void* out, size_t count, cocclDataType_t dt,
            cocclRedOp_t op, int root, cocclStream_t stream) {
  if (DeviceComm* d = deviceFor(c, "Reduce", {in, c.rank() == root ? out : nullptr})) {
    d->reduce(in, out, count, dt, op, root, stream, c.stats());
    return;
  }
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
  {
    bool dev = false, host = false;
    for (const P2POp& o : ops) {
      if (!o.bytes || !o.buf) continue;
      (memKind(o.buf) == MemKind::Device ? dev : host) = true;
    }
    COCCL_CHECK_ARG(!(dev && host),
                    "send/receive: a group mixes host and device buffers on one communicator");
    if (dev) {
      DeviceComm* d = c.device();
      COCCL_CHECK_USAGE(d && d->usable(), "Send/Recv: device buffers, but the device path is off: %s",
                        d ? d->reason().c_str() : "this coccl was built without CUDA");
      d->pointToPoint(ops, c.stats());
      return;
    }
  }
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
