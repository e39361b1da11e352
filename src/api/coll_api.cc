// Collectives and point-to-point at the C boundary: argument checks, then the collectives layer
// (host algorithms, or the device path for device buffers, enqueued on `stream`), or the group
// queue.
#include <cstdint>

#include "api/api_internal.h"
#include "collectives/host/reduce.h"

using namespace coccl;

namespace {

void checkType(cocclDataType_t dt) {
  COCCL_CHECK_ARG(dtypeValid(dt), "invalid data type %d (valid: 0..%d)", static_cast<int>(dt),
                  cocclNumTypes - 1);
}

void checkOp(cocclRedOp_t op) {
  COCCL_CHECK_ARG(static_cast<int>(op) >= 0 && op < cocclNumOps,
                  "invalid reduction op %d (valid: 0..%d)", static_cast<int>(op), cocclNumOps - 1);
}

// Total bytes of `count` elements times `mult`, rejecting size_t overflow.
size_t checkedBytes(size_t count, size_t mult, cocclDataType_t dt) {
  size_t es = dtypeSize(dt);
  COCCL_CHECK_ARG(mult == 0 || count <= SIZE_MAX / mult / es,
                  "count %zu overflows: %zu x %zu x %zu-byte elements is more than SIZE_MAX bytes",
                  count, count, mult, es);
  return count * mult * es;
}

void checkBuffer(const void* p, size_t bytes, const char* name) {
  COCCL_CHECK_ARG(bytes == 0 || p != nullptr, "%s is NULL with a non-zero count", name);
  COCCL_CHECK_ARG(bytes <= kMaxBufferBytes,
                  "%s: %zu bytes is more than any buffer holds (2^57 bytes): the count is wrong",
                  name, bytes);
  COCCL_CHECK_ARG(bytes <= UINTPTR_MAX - reinterpret_cast<uintptr_t>(p),
                  "%s %p with %zu bytes wraps past the end of the address space", name, p, bytes);
}

// Out-of-place buffers must not overlap; in-place is only the documented position. `moved`
// names the buffer that must sit at `inPlacePos` for an in-place call ("sendbuff" when it is
// `in`, "recvbuff" when it is `out`); both buffers passed checkBuffer (no wrap).
void checkOverlap(const void* in, size_t inBytes, const void* out, size_t outBytes,
                  const void* inPlacePos, const char* moved = "sendbuff") {
  if (!inBytes || !outBytes || in == inPlacePos) return;
  auto a = reinterpret_cast<uintptr_t>(in), b = reinterpret_cast<uintptr_t>(out);
  bool overlap = a < b + outBytes && b < a + inBytes;
  COCCL_CHECK_ARG(!overlap, "sendbuff and recvbuff overlap but %s is not at the in-place position",
                  moved);
}

// The codec of a *Codec call: NULL means the policy's choice; anything else must be a live
// handle (cocclInvalidArgument otherwise, never a dereference of a freed one).
const Codec* codecOf(cocclCodec_t c) {
  if (!c) return nullptr;
  checkLiveCodec(c);
  return c->codec.get();
}

CollRequest request(uint64_t seq, Coll coll, const void* in, void* out, size_t count,
                    cocclDataType_t dt, cocclRedOp_t op, int root, const Codec* codec,
                    cudaStream_t stream) {
  CollRequest r;
  r.coll = coll;
  r.in = in;
  r.out = out;
  r.count = count;
  r.dt = dt;
  r.op = op;
  r.root = root;
  r.codec = codec;
  r.stream = stream;
  r.seq = seq;
  return r;
}

// Runs `body(seq)` now, or queues it when inside a group. `seq`: the call's number
// (call_desc.h), taken before the checks so that a call that fails them here still counts and
// its peers' agreement sees this rank one call ahead. `body` stays a template argument so that
// a call outside a group allocates nothing here (a std::function holding its captures would).
template <class F, class B>
cocclResult_t run(cocclComm_t comm, const char* fn, F&& check, B body) {
  return guarded(comm, fn, [&] {
    Communicator& c = usableComm(comm);
    const uint64_t seq = c.nextCallSeq();
    check(c);
    if (inGroup()) {
      QueuedOp op;
      op.comm = comm;
      op.run = [body = std::move(body), seq] { body(seq); };
      enqueue(std::move(op));
      return;
    }
    std::lock_guard<std::mutex> lock(comm->opMutex);
    body(seq);
  });
}

cocclResult_t doAllReduce(const void* sendbuff, void* recvbuff, size_t count, cocclDataType_t dt,
                          cocclRedOp_t op, cocclCodec_t codec, cocclComm_t comm,
                          cudaStream_t stream, const char* fn) {
  return run(
      comm, fn,
      [&](Communicator&) {
        checkType(dt);
        (void)codecOf(codec);  // NULL or a live handle, checked at the call
        checkOp(op);
        size_t b = checkedBytes(count, 1, dt);
        checkBuffer(sendbuff, b, "sendbuff");
        checkBuffer(recvbuff, b, "recvbuff");
        checkOverlap(sendbuff, b, recvbuff, b, recvbuff);
      },
      [=](uint64_t seq) {
        if (count)
          comm->impl->run(request(seq, Coll::AllReduce, sendbuff, recvbuff, count, dt, op, 0,
                                  codecOf(codec), stream));
      });
}

cocclResult_t doReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                              cocclDataType_t dt, cocclRedOp_t op, cocclCodec_t codec,
                              cocclComm_t comm, cudaStream_t stream, const char* fn) {
  return run(
      comm, fn,
      [&](Communicator& c) {
        checkType(dt);
        (void)codecOf(codec);  // NULL or a live handle, checked at the call
        checkOp(op);
        size_t out = checkedBytes(recvcount, 1, dt);
        size_t in = checkedBytes(recvcount, static_cast<size_t>(c.nranks()), dt);
        checkBuffer(sendbuff, in, "sendbuff");
        checkBuffer(recvbuff, out, "recvbuff");
        checkOverlap(recvbuff, out, sendbuff, in,
                     static_cast<const char*>(sendbuff) + static_cast<size_t>(c.rank()) * out,
                     "recvbuff (sendbuff + rank * recvcount)");
      },
      [=](uint64_t seq) {
        if (recvcount)
          comm->impl->run(request(seq, Coll::ReduceScatter, sendbuff, recvbuff, recvcount, dt, op,
                                  0, codecOf(codec), stream));
      });
}

cocclResult_t doAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                          cocclDataType_t dt, cocclCodec_t codec, cocclComm_t comm,
                          cudaStream_t stream, const char* fn) {
  return run(
      comm, fn,
      [&](Communicator& c) {
        checkType(dt);
        (void)codecOf(codec);  // NULL or a live handle, checked at the call
        size_t in = checkedBytes(sendcount, 1, dt);
        size_t out = checkedBytes(sendcount, static_cast<size_t>(c.nranks()), dt);
        checkBuffer(sendbuff, in, "sendbuff");
        checkBuffer(recvbuff, out, "recvbuff");
        checkOverlap(sendbuff, in, recvbuff, out,
                     static_cast<const char*>(recvbuff) + static_cast<size_t>(c.rank()) * in);
      },
      [=](uint64_t seq) {
        if (sendcount)
          comm->impl->run(request(seq, Coll::AllGather, sendbuff, recvbuff, sendcount, dt, cocclSum,
                                  0, codecOf(codec), stream));
      });
}

cocclResult_t doAllGatherDelta(const void* sendbuff, void* recvbuff, size_t sendcount,
                               cocclDataType_t dt, cocclCodec_t codec, unsigned flags,
                               cocclComm_t comm, cudaStream_t stream) {
  return run(
      comm, "cocclAllGatherDelta",
      [&](Communicator& c) {
        checkType(dt);
        (void)codecOf(codec);  // NULL or a live handle, checked at the call
        COCCL_CHECK_ARG((flags & ~COCCL_DELTA_RESET) == 0,
                        "flags 0x%x: only COCCL_DELTA_RESET (0x%x) is defined", flags,
                        COCCL_DELTA_RESET);
        size_t in = checkedBytes(sendcount, 1, dt);
        size_t out = checkedBytes(sendcount, static_cast<size_t>(c.nranks()), dt);
        checkBuffer(sendbuff, in, "sendbuff");
        checkBuffer(recvbuff, out, "recvbuff");
        const char* inPlace =
            static_cast<const char*>(recvbuff) + static_cast<size_t>(c.rank()) * in;
        if (flags & COCCL_DELTA_RESET) {
          checkOverlap(sendbuff, in, recvbuff, out, inPlace);
        } else if (in) {
          // recvbuff's own shard is the reference the difference is taken against.
          auto a = reinterpret_cast<uintptr_t>(sendbuff), b = reinterpret_cast<uintptr_t>(recvbuff);
          COCCL_CHECK_ARG(!(a < b + out && b < a + in),
                          "sendbuff overlaps recvbuff (in place needs COCCL_DELTA_RESET: without "
                          "it recvbuff's own shard holds the previous values)");
        }
      },
      [=](uint64_t seq) {
        if (sendcount)
          comm->impl->runAllGatherDelta(request(seq, Coll::AllGather, sendbuff, recvbuff,
                                                sendcount, dt, cocclSum, 0, codecOf(codec), stream),
                                        flags);
      });
}

cocclResult_t doP2P(bool send, void* buf, size_t count, cocclDataType_t dt, int peer,
                    cocclCodec_t codec, cocclComm_t comm, cudaStream_t stream, const char* fn) {
  return guarded(comm, fn, [&] {
    Communicator& c = usableComm(comm);
    checkType(dt);
    COCCL_CHECK_ARG(peer >= 0 && peer < c.nranks(), "peer %d is outside [0, %d)", peer, c.nranks());
    size_t b = checkedBytes(count, 1, dt);
    checkBuffer(buf, b, send ? "sendbuff" : "recvbuff");
    QueuedOp op;
    op.comm = comm;
    op.isP2P = true;
    op.p2p = request(0, send ? Coll::Send : Coll::Recv, send ? buf : nullptr, send ? nullptr : buf,
                     count, dt, cocclSum, peer, codecOf(codec), stream);
    op.p2pCodec = codec;
    if (inGroup()) {
      enqueue(std::move(op));
      return;
    }
    COCCL_CHECK_USAGE(peer != c.rank() || count == 0,
                      "a send or receive to self outside a group would deadlock; "
                      "wrap the pair in cocclGroupStart/cocclGroupEnd");
    std::lock_guard<std::mutex> lock(comm->opMutex);
    c.runP2P({op.p2p});
  });
}

}  // namespace

extern "C" {

COCCL_API cocclResult_t cocclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       cocclDataType_t datatype, cocclRedOp_t op, cocclComm_t comm,
                                       cudaStream_t stream) {
  return doAllReduce(sendbuff, recvbuff, count, datatype, op, nullptr, comm, stream,
                     "cocclAllReduce");
}

COCCL_API cocclResult_t cocclAllReduceCodec(const void* sendbuff, void* recvbuff, size_t count,
                                            cocclDataType_t datatype, cocclRedOp_t op,
                                            cocclCodec_t codec, cocclComm_t comm,
                                            cudaStream_t stream) {
  return doAllReduce(sendbuff, recvbuff, count, datatype, op, codec, comm, stream,
                     "cocclAllReduceCodec");
}

COCCL_API cocclResult_t cocclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           cocclDataType_t datatype, cocclRedOp_t op,
                                           cocclComm_t comm, cudaStream_t stream) {
  return doReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, nullptr, comm, stream,
                         "cocclReduceScatter");
}

COCCL_API cocclResult_t cocclReduceScatterCodec(const void* sendbuff, void* recvbuff,
                                                size_t recvcount, cocclDataType_t datatype,
                                                cocclRedOp_t op, cocclCodec_t codec,
                                                cocclComm_t comm, cudaStream_t stream) {
  return doReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, codec, comm, stream,
                         "cocclReduceScatterCodec");
}

COCCL_API cocclResult_t cocclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       cocclDataType_t datatype, cocclComm_t comm,
                                       cudaStream_t stream) {
  return doAllGather(sendbuff, recvbuff, sendcount, datatype, nullptr, comm, stream,
                     "cocclAllGather");
}

COCCL_API cocclResult_t cocclAllGatherCodec(const void* sendbuff, void* recvbuff, size_t sendcount,
                                            cocclDataType_t datatype, cocclCodec_t codec,
                                            cocclComm_t comm, cudaStream_t stream) {
  return doAllGather(sendbuff, recvbuff, sendcount, datatype, codec, comm, stream,
                     "cocclAllGatherCodec");
}

COCCL_API cocclResult_t cocclAllGatherDelta(const void* sendbuff, void* recvbuff,
                                            size_t sendcount, cocclDataType_t datatype,
                                            cocclCodec_t codec, unsigned int flags,
                                            cocclComm_t comm, cudaStream_t stream) {
  return doAllGatherDelta(sendbuff, recvbuff, sendcount, datatype, codec, flags, comm, stream);
}

COCCL_API cocclResult_t cocclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                       cocclDataType_t datatype, int root, cocclComm_t comm,
                                       cudaStream_t stream) {
  return run(
      comm, "cocclBroadcast",
      [&](Communicator& c) {
        checkType(datatype);
        COCCL_CHECK_ARG(root >= 0 && root < c.nranks(), "root %d is outside [0, %d)", root,
                        c.nranks());
        size_t b = checkedBytes(count, 1, datatype);
        if (c.rank() == root) checkBuffer(sendbuff, b, "sendbuff");
        checkBuffer(recvbuff, b, "recvbuff");
        if (c.rank() == root) checkOverlap(sendbuff, b, recvbuff, b, recvbuff);
      },
      [=](uint64_t seq) {
        if (count)
          comm->impl->run(request(seq, Coll::Broadcast, sendbuff, recvbuff, count, datatype,
                                  cocclSum, root, nullptr, stream));
      });
}

COCCL_API cocclResult_t cocclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    cocclDataType_t datatype, cocclRedOp_t op, int root,
                                    cocclComm_t comm, cudaStream_t stream) {
  return run(
      comm, "cocclReduce",
      [&](Communicator& c) {
        checkType(datatype);
        checkOp(op);
        COCCL_CHECK_ARG(root >= 0 && root < c.nranks(), "root %d is outside [0, %d)", root,
                        c.nranks());
        size_t b = checkedBytes(count, 1, datatype);
        checkBuffer(sendbuff, b, "sendbuff");
        if (c.rank() == root) {
          checkBuffer(recvbuff, b, "recvbuff");
          checkOverlap(sendbuff, b, recvbuff, b, recvbuff);
        }
      },
      [=](uint64_t seq) {
        if (count)
          comm->impl->run(request(seq, Coll::Reduce, sendbuff, recvbuff, count, datatype, op, root,
                                  nullptr, stream));
      });
}

COCCL_API cocclResult_t cocclSend(const void* sendbuff, size_t count, cocclDataType_t datatype,
                                  int peer, cocclComm_t comm, cudaStream_t stream) {
  return doP2P(true, const_cast<void*>(sendbuff), count, datatype, peer, nullptr, comm, stream,
               "cocclSend");
}

COCCL_API cocclResult_t cocclSendCodec(const void* sendbuff, size_t count, cocclDataType_t datatype,
                                       int peer, cocclCodec_t codec, cocclComm_t comm,
                                       cudaStream_t stream) {
  return doP2P(true, const_cast<void*>(sendbuff), count, datatype, peer, codec, comm, stream,
               "cocclSendCodec");
}

COCCL_API cocclResult_t cocclRecv(void* recvbuff, size_t count, cocclDataType_t datatype, int peer,
                                  cocclComm_t comm, cudaStream_t stream) {
  return doP2P(false, recvbuff, count, datatype, peer, nullptr, comm, stream, "cocclRecv");
}

COCCL_API cocclResult_t cocclRecvCodec(void* recvbuff, size_t count, cocclDataType_t datatype,
                                       int peer, cocclCodec_t codec, cocclComm_t comm,
                                       cudaStream_t stream) {
  return doP2P(false, recvbuff, count, datatype, peer, codec, comm, stream, "cocclRecvCodec");
}

}  // extern "C"
