// Collectives and point-to-point. An AllReduce, ReduceScatter, AllGather, Send or Recv goes to
// coccl when coccl says it would compress it (cocclCommQueryCodec: the coccl communicator's own
// codec policy - its policy file's rules (COCCL_POLICY), then COCCL_CODEC_<COLL> / COCCL_CODEC /
// COCCL_CODEC_SENDRECV, COCCL_COMPRESS_MIN_BYTES, SUM/AVG on fp32/fp16/bf16), and an uncompressed
// collective on device buffers goes to coccl when the deciding policy rule gives it to coccl's
// own kernels ("exact": "coccl", cocclCommQueryExactPath: a measured table found them faster
// than NCCL at that size); every other call goes to the real NCCL, on the communicator's real
// half, unchanged. Both ends of a message ask the same policy entry with the same count and
// type, so they decide alike.
#include <cstdio>

#include "shim.h"

namespace shim {
namespace {

const char* collName(Coll k) {
  switch (k) {
    case Coll::AllReduce: return "ncclAllReduce";
    case Coll::ReduceScatter: return "ncclReduceScatter";
    case Coll::AllGather: return "ncclAllGather";
    case Coll::Send: return "ncclSend";
    case Coll::Recv: return "ncclRecv";
  }
  return "?";
}

// The policy's name for the call's collective (Send and Recv share one entry).
cocclCollKind_t policyKind(Coll k) {
  return k == Coll::AllReduce       ? cocclCollAllReduce
         : k == Coll::ReduceScatter ? cocclCollReduceScatter
         : k == Coll::AllGather     ? cocclCollAllGather
                                    : cocclCollSendRecv;
}

// Whether coccl compresses the call (ncclDataType_t and ncclRedOp_t values are coccl's); *codec
// receives the codec's spec. A question coccl rejects (an invalid type or op) goes to NCCL,
// which reports its own error.
bool compressed(const CollOp& o, char* codec, size_t codecLen) {
  if (!o.comm->coccl) return false;
  int on = 0;
  if (cocclCommQueryCodec(o.comm->coccl, policyKind(o.kind), o.count,
                          static_cast<cocclDataType_t>(o.type), static_cast<cocclRedOp_t>(o.op),
                          &on, codec, codecLen) != cocclSuccess ||
      !on)
    return false;
  // A coccl communicator without a device (cocclCommCuDevice -1: coccl built without its
  // device path) cannot take GPU buffers: those stay with NCCL.
  if (o.comm->cocclDev < 0 && (isDeviceMemory(o.send) || isDeviceMemory(o.recv))) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      logf(1, "coccl has no device path here (cocclCommCuDevice is -1): collectives on GPU "
              "buffers go to NCCL uncompressed");
    return false;
  }
  return true;
}

// Whether coccl's policy gives this uncompressed collective on device buffers to coccl's own
// kernels. A question coccl rejects goes to NCCL.
bool exactOnCoccl(const CollOp& o) {
  if (!o.comm->coccl || o.comm->cocclDev < 0 || o.kind == Coll::Send || o.kind == Coll::Recv)
    return false;
  cocclExactPath_t path = cocclExactDefault;
  if (cocclCommQueryExactPath(o.comm->coccl, policyKind(o.kind), o.count,
                              static_cast<cocclDataType_t>(o.type), static_cast<cocclRedOp_t>(o.op),
                              &path) != cocclSuccess ||
      path != cocclExactCoccl)
    return false;
  // Device buffers only (host buffers stay with NCCL as before).
  return isDeviceMemory(o.recv) && (o.send == o.recv || isDeviceMemory(o.send));
}

ncclResult_t collective(CollOp op, ncclComm_t comm) {
  ncclResult_t code;
  op.comm = usable(comm, collName(op.kind), &code);
  if (!op.comm) return code;
  char codec[256] = "";
  const bool lossy = compressed(op, codec, sizeof(codec));
  if (!lossy) {
    if (!exactOnCoccl(op)) return runReal(op);
    std::snprintf(codec, sizeof(codec), "none, on coccl's kernels");
  }
  op.delta = lossy && isDeltaAllGather(op);
  logf(3, "%s of %zu elements of type %d%s: coccl (%s%s)", collName(op.kind), op.count, op.type,
       op.peer >= 0 ? " with a peer" : "", codec, op.delta ? ", weight difference" : "");
  if (inGroup()) {
    queueCoccl(op);
    return ncclSuccess;
  }
  return runCoccl(op);
}

}  // namespace

ncclResult_t runCoccl(const CollOp& o) {
  auto dt = static_cast<cocclDataType_t>(o.type);
  auto op = static_cast<cocclRedOp_t>(o.op);
  cocclComm_t cc = o.comm->coccl;
  cocclResult_t r = cocclInternalError;
  switch (o.kind) {
    case Coll::AllReduce: r = cocclAllReduce(o.send, o.recv, o.count, dt, op, cc, o.stream); break;
    case Coll::ReduceScatter:
      r = cocclReduceScatter(o.send, o.recv, o.count, dt, op, cc, o.stream);
      break;
    case Coll::AllGather:
      if (o.delta) return runDeltaAllGather(o);
      r = cocclAllGather(o.send, o.recv, o.count, dt, cc, o.stream);
      break;
    case Coll::Send: r = cocclSend(o.send, o.count, dt, o.peer, cc, o.stream); break;
    case Coll::Recv: r = cocclRecv(o.recv, o.count, dt, o.peer, cc, o.stream); break;
  }
  return fromCoccl(r, collName(o.kind));
}

ncclResult_t runReal(const CollOp& o) {
  ncclResult_t code;
  const char* name = collName(o.kind);
  const Real* rl = needReal(name, &code);
  if (!rl) return code;
  if (!o.comm->real)
    return fail(ncclInvalidUsage, "%s: the communicator has no real NCCL half", name);
  ncclComm_t rc = o.comm->real;
  switch (o.kind) {
    case Coll::AllReduce:
      return fromReal(rl->ncclAllReduce(o.send, o.recv, o.count, o.type, o.op, rc, o.stream));
    case Coll::ReduceScatter:
      return fromReal(rl->ncclReduceScatter(o.send, o.recv, o.count, o.type, o.op, rc, o.stream));
    case Coll::AllGather:
      return fromReal(rl->ncclAllGather(o.send, o.recv, o.count, o.type, rc, o.stream));
    case Coll::Send:
      return fromReal(rl->ncclSend(o.send, o.count, o.type, o.peer, rc, o.stream));
    case Coll::Recv:
      return fromReal(rl->ncclRecv(o.recv, o.count, o.type, o.peer, rc, o.stream));
  }
  return ncclInternalError;
}

}  // namespace shim

using namespace shim;

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collective({Coll::AllReduce, sendbuff, recvbuff, count, datatype, op, nullptr, stream},
                    comm);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collective(
      {Coll::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, nullptr, stream}, comm);
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return collective(
      {Coll::AllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, nullptr, stream}, comm);
}

// ---- always forwarded ------------------------------------------------------------------------
NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  SHIM_FORWARD(ncclBroadcast, sendbuff, recvbuff, count, datatype, root, c->real, stream)
}

// ncclBcast is ncclBroadcast in place.
NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  SHIM_FORWARD(ncclBroadcast, buff, buff, count, datatype, root, c->real, stream)
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  SHIM_FORWARD(ncclReduce, sendbuff, recvbuff, count, datatype, op, root, c->real, stream)
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  SHIM_FORWARD(ncclAlltoAll, sendbuff, recvbuff, count, datatype, c->real, stream)
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  SHIM_FORWARD(ncclGather, sendbuff, recvbuff, count, datatype, root, c->real, stream)
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  SHIM_FORWARD(ncclScatter, sendbuff, recvbuff, count, datatype, root, c->real, stream)
}

// Send and Recv: through coccl (cocclSend / cocclRecv) when its SENDRECV policy compresses the
// message, else forwarded (ncclSend / ncclRecv of the real half).
NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  return collective(
      {Coll::Send, sendbuff, nullptr, count, datatype, ncclSum, nullptr, stream, peer}, comm);
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return collective(
      {Coll::Recv, nullptr, recvbuff, count, datatype, ncclSum, nullptr, stream, peer}, comm);
}
