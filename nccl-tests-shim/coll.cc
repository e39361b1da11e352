// Collectives and point-to-point. AllReduce, ReduceScatter and AllGather of SUM/AVG on
// fp32/fp16/bf16 whose total size reaches COCCL_COMPRESS_MIN_BYTES go to coccl when the codec
// policy of that collective (COCCL_CODEC_<COLL>, else COCCL_CODEC) is not "none"; every other
// call goes to the real NCCL, on the communicator's real half, unchanged.
#include "shim.h"

namespace shim {
namespace {

size_t typeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

const char* collName(Coll k) {
  return k == Coll::AllReduce ? "ncclAllReduce"
         : k == Coll::ReduceScatter ? "ncclReduceScatter"
                                    : "ncclAllGather";
}

// Bytes as coccl's policy counts them: the whole message (all ranks' blocks for RS/AG).
bool compressed(const CollOp& o) {
  const Env& e = env();
  bool on = o.kind == Coll::AllReduce ? e.compressAllReduce
            : o.kind == Coll::ReduceScatter ? e.compressReduceScatter
                                            : e.compressAllGather;
  if (!on || o.count == 0) return false;
  if (o.type != ncclFloat32 && o.type != ncclFloat16 && o.type != ncclBfloat16) return false;
  if (o.kind != Coll::AllGather && o.op != ncclSum && o.op != ncclAvg) return false;
  size_t ranks = o.kind == Coll::AllReduce ? 1 : static_cast<size_t>(o.comm->nranks);
  if (static_cast<long long>(o.count * typeSize(o.type) * ranks) < e.compressMinBytes) return false;
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

ncclResult_t collective(CollOp op, ncclComm_t comm) {
  ncclResult_t code;
  op.comm = usable(comm, collName(op.kind), &code);
  if (!op.comm) return code;
  if (!compressed(op)) return runReal(op);
  logf(3, "%s of %zu elements of type %d: coccl", collName(op.kind), op.count, op.type);
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
  cocclResult_t r =
      o.kind == Coll::AllReduce     ? cocclAllReduce(o.send, o.recv, o.count, dt, op, cc, o.stream)
      : o.kind == Coll::ReduceScatter ? cocclReduceScatter(o.send, o.recv, o.count, dt, op, cc, o.stream)
                                      : cocclAllGather(o.send, o.recv, o.count, dt, cc, o.stream);
  return fromCoccl(r, collName(o.kind));
}

ncclResult_t runReal(const CollOp& o) {
  ncclResult_t code;
  const char* name = collName(o.kind);
  const Real* rl = needReal(name, &code);
  if (!rl) return code;
  if (!o.comm->real) return fail(ncclInvalidUsage, "%s: the communicator has no real NCCL half", name);
  ncclComm_t rc = o.comm->real;
  switch (o.kind) {
    case Coll::AllReduce:
      return fromReal(rl->ncclAllReduce(o.send, o.recv, o.count, o.type, o.op, rc, o.stream));
    case Coll::ReduceScatter:
      return fromReal(rl->ncclReduceScatter(o.send, o.recv, o.count, o.type, o.op, rc, o.stream));
    case Coll::AllGather:
      return fromReal(rl->ncclAllGather(o.send, o.recv, o.count, o.type, rc, o.stream));
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

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  SHIM_FORWARD(ncclSend, sendbuff, count, datatype, peer, c->real, stream)
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  SHIM_FORWARD(ncclRecv, recvbuff, count, datatype, peer, c->real, stream)
}
