// The CUDA IPC executor's calls (cuda_ipc_executor.h; the protocol at the top of
// cuda_ipc_executor.cc): the collectives on the fused kernels or the staged pipeline, device
// Send/Recv on the P2P kernel, and the staged pipeline's exchanges as P2P kernels.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/call_desc.h"
#include "collectives/cuda_ipc/executor_impl.h"
#include "collectives/cuda_ipc/launch.h"
#include "collectives/layout.h"
#include "collectives/p2p_header.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "mem/cuda_check.h"

namespace coccl {
namespace {

cudaError_t launchReduceCodec(const dev::Ctx* ctx, const dev::ReduceArgs& a, int nb,
                              cudaStream_t s) {
  switch (a.dtype) {
    case cocclBfloat16:
      return dev::launchReduceCodecBf16(ctx, a, nb, s);
    case cocclFloat16:
      return dev::launchReduceCodecFp16(ctx, a, nb, s);
    default:
      return dev::launchReduceCodecFp32(ctx, a, nb, s);
  }
}

cudaError_t launchGatherCodec(const dev::Ctx* ctx, const dev::GatherArgs& a, int nb,
                              cudaStream_t s) {
  switch (a.dtype) {
    case cocclBfloat16:
      return dev::launchGatherCodecBf16(ctx, a, nb, s);
    case cocclFloat16:
      return dev::launchGatherCodecFp16(ctx, a, nb, s);
    default:
      return dev::launchGatherCodecFp32(ctx, a, nb, s);
  }
}

cudaStream_t streamOf(const CollRequest& r) {
  return reinterpret_cast<cudaStream_t>(r.stream);
}

// The call's descriptor as the kernels compare it (agreeCall in kernel_common.cuh).
dev::AgreeDesc agreeDescOf(const CollRequest& r) {
  static_assert(sizeof(CallDesc) == sizeof(dev::AgreeDesc), "descriptor sizes");
  const CallDesc d = makeCallDesc(r);
  dev::AgreeDesc a;
  std::memcpy(&a, &d, sizeof(a));
  return a;
}

}  // namespace

void CudaIpcExecutor::run(const CollRequest& r, CollStats& stats) {
  Impl& m = *impl_;
  if (r.codec && !fusedCodec(r.codec)) {
    DeviceGuard g(m.device);
    return m.staged->run(r, stats, m.stagedAgree);
  }
  switch (r.coll) {
    case Coll::AllReduce:
      return m.allReduce(r, stats);
    case Coll::ReduceScatter:
      return m.reduceScatter(r, stats);
    case Coll::AllGather:
      return m.allGather(r, stats);
    case Coll::Broadcast:
      return m.broadcast(r, stats);
    case Coll::Reduce:
      return m.reduce(r, stats);
    default:
      COCCL_THROW(cocclInternalError, "CUDA IPC executor: Send/Recv go through runP2P");
  }
}

void CudaIpcExecutor::Impl::allReduce(const CollRequest& r, CollStats& stats) {
  const int p = comm.nranks(), me = comm.rank();
  const size_t es = dtypeSize(r.dt);
  const Codec* codec = r.codec;
  const CodecDesc desc = codec ? codec->deviceDesc() : CodecDesc{};
  dev::ReduceArgs a =
      planner().reduce(dev::Coll::AllReduce, r.in, r.out, r.count, static_cast<int>(es), r.dt, r.op,
                       0, codec ? &desc : nullptr);
  a.desc = agreeDescOf(r);
  a.staged = comm.config().deviceCodecRings ? 1 : 0;  // (compressed kernels only)
  stats.wireBytesSent = twoShotWireBytes(r.count, p, a.unit, me, [&](size_t n) {
    return codec ? codec->encodedBytes(n, r.dt) : n * es;
  });
  stats.algorithm = "two-shot";
  DeviceGuard g(device);
  launched(codec ? launchReduceCodec(ctx, a, a.nblocks, streamOf(r))
                 : dev::launchReduceExact(ctx, a, a.nblocks, streamOf(r)),
           "AllReduce");
}

void CudaIpcExecutor::Impl::reduceScatter(const CollRequest& r, CollStats& stats) {
  const size_t es = dtypeSize(r.dt);
  const Codec* codec = r.codec;
  const CodecDesc desc = codec ? codec->deviceDesc() : CodecDesc{};
  dev::ReduceArgs a =
      planner().reduce(dev::Coll::ReduceScatter, r.in, r.out, r.count, static_cast<int>(es), r.dt,
                       r.op, 0, codec ? &desc : nullptr);
  a.desc = agreeDescOf(r);
  a.staged = comm.config().deviceCodecRings ? 1 : 0;  // (compressed kernels only)
  stats.wireBytesSent =
      directWireBytes(codec ? codec->encodedBytes(r.count, r.dt) : r.count * es, comm.nranks());
  stats.algorithm = "two-shot";
  DeviceGuard g(device);
  launched(codec ? launchReduceCodec(ctx, a, a.nblocks, streamOf(r))
                 : dev::launchReduceExact(ctx, a, a.nblocks, streamOf(r)),
           "ReduceScatter");
}

void CudaIpcExecutor::Impl::reduce(const CollRequest& r, CollStats& stats) {
  const size_t es = dtypeSize(r.dt);
  dev::ReduceArgs a = planner().reduce(dev::Coll::Reduce, r.in, r.out, r.count,
                                       static_cast<int>(es), r.dt, r.op, r.root, nullptr);
  a.desc = agreeDescOf(r);
  stats.wireBytesSent = comm.rank() == r.root ? 0 : r.count * es;
  stats.algorithm = "direct";
  DeviceGuard g(device);
  launched(dev::launchReduceExact(ctx, a, a.nblocks, streamOf(r)), "Reduce");
}

void CudaIpcExecutor::Impl::allGather(const CollRequest& r, CollStats& stats) {
  const size_t es = dtypeSize(r.dt);
  const Codec* codec = r.codec;
  const CodecDesc desc = codec ? codec->deviceDesc() : CodecDesc{};
  dev::GatherArgs a = planner().gather(dev::Coll::AllGather, r.in, r.out, r.count,
                                       static_cast<int>(es), r.dt, 0, codec ? &desc : nullptr);
  a.desc = agreeDescOf(r);
  a.staged = comm.config().deviceCodecRings ? 1 : 0;  // (compressed kernels only)
  stats.wireBytesSent =
      directWireBytes(codec ? codec->encodedBytes(r.count, r.dt) : r.count * es, comm.nranks());
  stats.algorithm = "direct";
  DeviceGuard g(device);
  launched(codec ? launchGatherCodec(ctx, a, a.nblocks, streamOf(r))
                 : dev::launchGatherExact(ctx, a, a.nblocks, streamOf(r)),
           "AllGather");
}

void CudaIpcExecutor::Impl::broadcast(const CollRequest& r, CollStats& stats) {
  const int me = comm.rank();
  const size_t es = dtypeSize(r.dt), bytes = r.count * es;
  dev::GatherArgs a = planner().gather(dev::Coll::Broadcast, me == r.root ? r.in : nullptr, r.out,
                                       r.count, static_cast<int>(es), r.dt, r.root, nullptr);
  a.desc = agreeDescOf(r);
  stats.wireBytesSent = me == r.root ? directWireBytes(bytes, comm.nranks()) : 0;
  stats.algorithm = "direct";
  DeviceGuard g(device);
  launched(dev::launchGatherExact(ctx, a, a.nblocks, streamOf(r)), "Broadcast");
}

void CudaIpcExecutor::runP2P(const std::vector<CollRequest>& ops, CollStats& stats) {
  Impl& m = *impl_;
  COCCL_CHECK_USAGE(ops.size() <= static_cast<size_t>(dev::kMaxP2P),
                    "a group holds %zu device sends/receives on one communicator (at most %d)",
                    ops.size(), dev::kMaxP2P);
  std::vector<dev::P2PMsg> msgs;
  size_t sent = 0;
  std::vector<cudaStream_t> streams;
  for (const CollRequest& o : ops) {
    const bool send = o.coll == Coll::Send;
    const size_t bytes = o.count * dtypeSize(o.dt);
    msgs.push_back(dev::P2PMsg{o.p2pBuffer(), bytes, o.peer(), send ? 1 : 0});
    if (send) sent += bytes;
    cudaStream_t s = streamOf(o);
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(s);
  }
  dev::P2PArgs a;
  COCCL_CHECK_ARG(m.planner().p2p(msgs, &a), "send/receive too large");
  COCCL_CHECK_USAGE(streams.size() <= static_cast<size_t>(kIpcEvents),
                    "a group of device sends/receives spans %zu streams (at most %d)",
                    streams.size(), kIpcEvents);
  stats.wireBytesSent = sent;
  stats.algorithm = "p2p";
  DeviceGuard g(m.device);
  cudaStream_t s0 = streams.empty() ? nullptr : streams[0];
  for (size_t i = 1; i < streams.size(); ++i) {
    COCCL_CUDA_CHECK(cudaEventRecord(m.joinIn[i], streams[i]));
    COCCL_CUDA_CHECK(cudaStreamWaitEvent(s0, m.joinIn[i], 0));
  }
  m.launched(dev::launchP2P(m.ctx, a, a.nblocks, s0), "Send/Recv");
  if (streams.size() > 1) {
    COCCL_CUDA_CHECK(cudaEventRecord(m.joinOut, s0));
    for (size_t i = 1; i < streams.size(); ++i)
      COCCL_CUDA_CHECK(cudaStreamWaitEvent(streams[i], m.joinOut, 0));
  }
}

void IpcMover::exchange(const std::vector<Xfer>& group, const CallDesc* agree, cudaStream_t s) {
  std::vector<dev::P2PMsg> msgs;
  msgs.reserve(group.size());
  for (const Xfer& x : group) msgs.push_back(dev::P2PMsg{x.buf, x.bytes, x.peer, x.send ? 1 : 0});
  dev::P2PArgs a;
  COCCL_CHECK_USAGE(msgs.size() <= static_cast<size_t>(dev::kMaxP2P) && m_.planner().p2p(msgs, &a),
                    "staged codec pipeline: an exchange of %zu transfers does not fit the P2P "
                    "kernel (at most %d)",
                    msgs.size(), dev::kMaxP2P);
  // No pair agreement: an extra round per exchange of every piece (the sizes follow from the
  // pipeline's plan of the call on each rank). The call's agreement, in its first exchange:
  // descriptors posted at its start and compared at its end (agreePost / agreeCheck), no round
  // of its own.
  a.agree = 0;
  if (agree) {
    a.callAgree = 1;
    std::memcpy(&a.desc, agree, sizeof(a.desc));
  }
  m_.launched(dev::launchP2P(m_.ctx, a, a.nblocks, s), "staged codec exchange");
}

void IpcMover::abort() {
  // A pipeline that failed half-way: the P2P kernels already issued time out or see the
  // poison; abort releases the peers now.
  if (!m_.host || m_.aborted) return;
  m_.aborted = true;
  m_.host->abort = 1u;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  (void)dev::launchPoison(m_.ctx, m_.nblocks, m_.side);
  (void)cudaGetLastError();
}

}  // namespace coccl
