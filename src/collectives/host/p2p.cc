// Send/Recv groups on host buffers: the header exchange and check of p2p_header.h, then the
// payloads of the pairs that agree, compressed or exact.
//
// Every operation advances on its own (a small state machine polled in one wait): its payload
// moves as soon as its own pair of headers agrees, never waiting for the other operations of
// the group. So the two ends may group their operations differently (a sender that groups
// two sends, a receiver that posts two blocking receives) as with NCCL, and exchange patterns
// inside a group cannot deadlock: nothing an operation does waits for another one.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/host/algorithms.h"
#include "collectives/host/host_executor.h"
#include "collectives/p2p_header.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"

namespace coccl {
namespace {

using Part = HostExecutor::P2PPart;

bool overlaps(const void* a, size_t an, const void* b, size_t bn) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return an && bn && x < y + bn && y < x + an;
}

enum class State { Headers, Payload, Done };

struct Op {
  const CollRequest* r = nullptr;
  bool send = false;
  uint64_t seq = 0;        // the message's number on the Send -> Recv channel of its pair
  P2PHeader mine, theirs;  // sent / received header (the transport reads / writes them)
  RequestPtr mineReq, theirsReq, payloadReq;
  std::string mismatch;       // "" while the pair agrees
  const void* src = nullptr;  // Send: the payload bytes (user buffer, copy or encoded)
  PoolBuffer staging;         // Send: encoded payload or copy; compressed Recv: received payload
  State state = State::Headers;
};

// One step of `o`; true when it is done.
bool advance(HostExecutor& x, Op& o, int me) {
  Transport& t = x.transport();
  const CollRequest& r = *o.r;
  if (o.state == State::Headers) {
    if (!o.theirsReq->done()) return false;
    o.mismatch = o.send ? p2pMismatch(o.mine, o.theirs, me, r.peer())
                        : p2pMismatch(o.theirs, o.mine, r.peer(), me);
    const size_t bytes = o.mine.payloadBytes;
    const uint64_t tag = HostExecutor::p2pTag(Part::Payload, o.seq);
    if (o.send) {
      // A small payload left with the header already (hostSendRecv).
      if (o.mismatch.empty() && bytes && !p2pEager(bytes)) {
        o.payloadReq = t.isend(r.peer(), tag, o.src, bytes);
        x.stats().wireBytesSent += bytes;
      }
    } else if (o.mismatch.empty() && bytes) {
      void* dst = r.out;
      if (r.codec) {
        o.staging = x.pool().get(bytes);
        dst = o.staging.data();
      }
      o.payloadReq = t.irecv(r.peer(), tag, dst, bytes);
    } else if (isP2PHeader(o.theirs, P2PRole::Sender) && p2pEager(o.theirs.payloadBytes)) {
      // Disagreed, but the sender's small payload is on its way: taken into a pool buffer
      // (at most kP2PEagerBytes) and dropped, never into recvbuff.
      o.staging = x.pool().get(o.theirs.payloadBytes);
      o.payloadReq = t.irecv(r.peer(), tag, o.staging.data(), o.theirs.payloadBytes);
    }
    o.state = State::Payload;
  }
  if (o.state == State::Payload) {
    if (!o.mineReq->done()) return false;
    if (o.payloadReq && !o.payloadReq->done()) return false;
    if (o.payloadReq && !o.send && r.codec && o.mismatch.empty())
      r.codec->decode(o.staging.data(), r.count, r.dt, r.out);
    o.payloadReq.reset();
    o.staging.release();
    o.state = State::Done;
  }
  return true;
}

}  // namespace

void hostSendRecv(HostExecutor& x, const std::vector<CollRequest>& group) {
  Transport& t = x.transport();
  const int me = x.rank();
  std::vector<Op> ops(group.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    Op& o = ops[i];
    o.r = &group[i];
    o.send = o.r->coll == Coll::Send;
    o.seq = o.send ? x.nextSendSeq(o.r->peer()) : x.nextRecvSeq(o.r->peer());
    o.mine = makeP2PHeader(o.send ? P2PRole::Sender : P2PRole::Receiver, o.seq, o.r->count, o.r->dt,
                           o.r->codec);
  }
  // Headers: every receive first (eager sends to ourselves find them posted), then the sends.
  for (Op& o : ops) {
    const Part part = o.send ? Part::ReceiverHeader : Part::Header;
    o.theirsReq =
        t.irecv(o.r->peer(), HostExecutor::p2pTag(part, o.seq), &o.theirs, sizeof(P2PHeader));
  }
  for (Op& o : ops) {
    const Part part = o.send ? Part::Header : Part::ReceiverHeader;
    o.mineReq = t.isend(o.r->peer(), HostExecutor::p2pTag(part, o.seq), &o.mine, sizeof(P2PHeader));
    x.stats().wireBytesSent += sizeof(P2PHeader);
  }
  // While the headers travel: the payload of every send, taken before any receive of the group
  // can write its buffer (a send that overlaps a receive, as nccl-tests' in-place sendrecv, is
  // sent as it was when the group started); small payloads leave at once.
  for (Op& o : ops) {
    if (!o.send) continue;
    const CollRequest& r = *o.r;
    const size_t raw = r.count * dtypeSize(r.dt);
    o.src = r.in;
    if (r.codec && r.count && !r.refused) {
      o.staging = x.pool().get(o.mine.payloadBytes);
      r.codec->encode(r.in, r.dt, r.count, o.staging.data());
      o.src = o.staging.data();
    }
    for (const CollRequest& q : group) {
      if (r.codec) break;
      if (q.coll == Coll::Send || !overlaps(r.in, raw, q.out, q.count * dtypeSize(q.dt))) continue;
      o.staging = x.pool().get(raw);
      std::memcpy(o.staging.data(), r.in, raw);
      o.src = o.staging.data();
      break;
    }
    if (p2pEager(o.mine.payloadBytes)) {
      o.payloadReq =
          t.isend(r.peer(), HostExecutor::p2pTag(Part::Payload, o.seq), o.src, o.mine.payloadBytes);
      x.stats().wireBytesSent += o.mine.payloadBytes;
    }
  }
  x.waiter().until(
      [&] {
        bool all = true;
        for (Op& o : ops) all = advance(x, o, me) && all;
        return all;
      },
      "send/receive");
  for (const Op& o : ops)
    if (!o.mismatch.empty()) COCCL_THROW(cocclInvalidUsage, "%s", o.mismatch.c_str());
  // The ends agree on a codec that refuses the count (no payload moved): both fail alike.
  for (const Op& o : ops)
    if (o.r->refused)
      COCCL_THROW(cocclInvalidArgument, "%s",
                  countRefusal(*o.r->codec, o.r->count, o.r->dt).c_str());
}

}  // namespace coccl
