// Host side of the device collectives: staging setup, per-call planning and kernel launch.
//
// ---- Protocol ------------------------------------------------------------------------------
// Each rank owns one CUDA IPC region (layout in dev_types.h) holding flags and staging
// sub-slots; every rank maps every other rank's region. A collective call is one kernel of NB
// blocks on the caller's stream. Block b of every rank forms channel b: it only touches flag
// [.][b] and sub-slot [.][b] entries, so channels are independent and no block ever waits for
// another block of its own grid. A message is processed in rounds sized to the sub-slots; in a
// round each channel moves one "part" (a whole number of codec blocks) of every shard.
//
// Round numbers. Every (rank, peer, channel) keeps seq = the number of rounds this pair ran on
// this channel, in device memory (region seq[q][b]); the kernel reads it at start, advances it
// per round and writes it back at the end, so a captured CUDA graph replays with fresh numbers
// and no host-side value is baked into it. Collectives advance every pair; Send/Recv only the
// pairs involved (both ends agree, as they post matching operations). A second per-channel
// counter cseq counts collective rounds (identical on every rank); it picks the outbox parity.
//
// Flags (u64, monotonic, in the waiter's memory; stored with st.release.sys after the data,
// polled with ld.acquire.sys; waits bounded by COCCL_TIMEOUT_MS on %globaltimer):
//   x.push[q][b] = s   q's round-s data for x is in x's inbox (slot of q, parity s & 1)
//   x.pull[q][b] = s   q's outbox (parity cseq & 1) holds its round-s result for x to read
//   x.free[q][b] = s   q finished reading, for every round <= s, what x staged for it
// Reuse rule (why single flags and two parities suffice): before writing a sub-slot for round
// s, the writer waits free >= s - 2 from every reader of it. The reader raises free = s only at
// the end of its round s, after its last read of round s; the writer's round s+2 uses the same
// parity as round s and is the first to overwrite it. Round s+1 uses the other parity, so a
// fast writer runs one round ahead without waiting. A waiter compares with >=, so a flag that
// already moved on to s+1 still releases the round-s wait (round s+1 wrote the other parity).
// For the outbox, whose parity follows cseq while free carries pair numbers: between two uses
// of one outbox parity both counters advanced by >= 2 (pair numbers also advance on
// Send/Recv), so free >= pairseq - 2 again covers the earlier use.
// AllReduce needs no extra synchronisation from this: a writer reaching round s has already
// seen every owner's round-(s-1) result flag, raised after that owner's end of round s-2.
//
// Failure: a wait that times out, sees the abort word (host-mapped, raised by cocclCommAbort)
// or a poisoned flag (~0, raised by a failed peer) records the error in host-mapped memory
// (cocclCommGetAsyncError), and the block poisons every flag it would raise at its peers and
// exits; later kernels of the communicator exit at once.
#include "collectives/device/device_comm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "codecs/codec.h"
#include "collectives/communicator.h"
#include "collectives/collectives.h"
#include "collectives/device/dev_types.h"
#include "collectives/device/device_common.h"
#include "collectives/device/launch.h"
#include "collectives/device/memtype.h"
#include "collectives/device/nccl_path.h"
#include "collectives/device/plan.h"
#include "collectives/host/layout.h"
#include "collectives/host/reduce.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "transport/cuda_ipc/cuda_check.h"
#include "transport/cuda_ipc/ipc_region.h"

namespace coccl {
namespace {

constexpr int kEvents = 8;  // streams a group of send/recv may span

// A 64-bit hash of the UUID of CUDA device `dev` (0 when none or unknown): ranks whose hashes
// are equal share one GPU, whatever their device ordinals (CUDA_VISIBLE_DEVICES may differ).
uint64_t gpuIdentity(int dev) {
  if (dev < 0) return 0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  uint64_t h = 0xcbf29ce484222325ull;
  for (char b : prop.uuid.bytes) h = (h ^ static_cast<uint8_t>(b)) * 0x100000001b3ull;
  return h == 0 ? 1 : h;
}

}  // namespace

struct DeviceComm::Impl {
  Communicator& comm;
  int device = -1;
  int nblocks = 0;
  std::string reason;
  dev::Layout lay;
  std::unique_ptr<CudaIpcRegion> region;
  std::unique_ptr<NcclDevicePath> nccl;  // the device path over NCCL instead of CUDA IPC
  // Beside CUDA IPC: the real NCCL for the uncompressed collectives and send/recv
  // (COCCL_DEVICE_EXACT).
  std::unique_ptr<NcclDevicePath> ncclExact;
  dev::HostState* host = nullptr;     // host view of the mapped state
  dev::HostState* hostDev = nullptr;  // its device view
  dev::Ctx* ctx = nullptr;            // device memory
  cudaStream_t side = nullptr;        // internal stream (abort)
  cudaEvent_t joinIn[kEvents] = {};
  cudaEvent_t joinOut = nullptr;
  bool used = false;
  bool aborted = false;

  explicit Impl(Communicator& c) : comm(c) {}
  ~Impl();

  void launched(cudaError_t e, const char* what) {
    used = true;
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      COCCL_THROW(cocclUnhandledCudaError, "%s kernel launch failed: %s (%s)", what,
                  cudaGetErrorName(e), cudaGetErrorString(e));
    }
  }
  // Uncompressed operations of type dt on the real NCCL beside CUDA IPC (not the fp8 types:
  // NCCL has them from 2.24 on sm_90 only, coccl's kernels everywhere).
  bool exactOnNccl(cocclDataType_t dt) const {
    return ncclExact && dt != cocclFloat8e4m3 && dt != cocclFloat8e5m2;
  }
  dev::Planner planner() const {
    dev::Planner pl;
    pl.lay = lay;
    pl.nblocks = nblocks;
    pl.nranks = comm.nranks();
    pl.rank = comm.rank();
    return pl;
  }
};

DeviceComm::Impl::~Impl() {
  if (device < 0) return;
  int prev = -1;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
  (void)cudaSetDevice(device);
  if (side) COCCL_CUDA_WARN(cudaStreamSynchronize(side));
  for (cudaEvent_t& e : joinIn)
    if (e) COCCL_CUDA_WARN(cudaEventDestroy(e));
  if (joinOut) COCCL_CUDA_WARN(cudaEventDestroy(joinOut));
  if (side) COCCL_CUDA_WARN(cudaStreamDestroy(side));
  if (ctx) COCCL_CUDA_WARN(cudaFree(ctx));  // waits for this process's kernels
  region.reset();
  if (host) COCCL_CUDA_WARN(cudaFreeHost(host));
  if (prev >= 0) (void)cudaSetDevice(prev);
}

DeviceComm::DeviceComm() = default;

DeviceComm::~DeviceComm() {
  if (!impl_ || !impl_->region) return;
  Impl& m = *impl_;
  // A region must not be freed while a peer still reads it or maps it: wait until the peers
  // consumed what this rank staged, unmap theirs, then meet them (bootstrap barrier) before
  // freing ours. After an abort or a failure: no waiting (peers are gone or were told).
  const bool healthy = !m.aborted && asyncError() == cocclSuccess &&
                       !m.comm.abortFlag().load() && !m.comm.bootstrap().aborted();
  if (healthy) {
    try {
      quiesce();
    } catch (const std::exception& e) {
      COCCL_WARN("device path teardown: %s", e.what());
    }
  }
  // A stuck NCCL call (a peer died) would hold the device synchronisation below forever.
  if (!healthy && !m.aborted && m.ncclExact) m.ncclExact->abort();
  {
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
    (void)cudaSetDevice(m.device);
    if (m.side) COCCL_CUDA_WARN(cudaStreamSynchronize(m.side));
    COCCL_CUDA_WARN(cudaDeviceSynchronize());
    if (prev >= 0) (void)cudaSetDevice(prev);
  }
  m.region->closePeers();
  if (healthy) {
    try {
      m.comm.bootstrap().barrier();
    } catch (const std::exception& e) {
      COCCL_WARN("device path teardown: peers did not all reach destroy: %s", e.what());
    }
  }
}

bool DeviceComm::built() { return true; }

int DeviceComm::currentDevice() {
  // Never initialise CUDA here: a process that has not touched CUDA stays fork-safe.
  if (!cudaDriverInitialised()) return -1;
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return dev;
}

std::unique_ptr<DeviceComm> DeviceComm::create(Communicator& c) {
  std::unique_ptr<DeviceComm> d(new DeviceComm());
  d->impl_ = std::make_unique<Impl>(c);
  Impl& m = *d->impl_;
  const Env& e = env();
  const int p = c.nranks();
  int dev = c.config().cudaDevice;  // recorded by cocclCommInitRank on the caller's thread
  if (p > dev::kMaxRanks) dev = -1;  // every rank sees the same p: all agree
  // COCCL_DEVICE_TRANSPORT: cuda_ipc, nccl, or auto (CUDA IPC, else NCCL when every rank has
  // a device: ranks on several hosts). Every rank reads the same value (documented), and every
  // decision below is taken from values all ranks share.
  const std::string& tp = e.deviceTransport;
  const int32_t tpCode = tp == "nccl" ? 2 : tp == "cuda_ipc" ? 1 : 0;
  const std::string& ex = c.config().deviceExact;
  const int32_t exCode = ex == "nccl" ? 2 : ex == "coccl" ? 1 : 0;
  struct RankDev {
    int32_t device;     // ordinal, -1 none
    int32_t transport;  // tpCode + 4 * exCode
    uint64_t gpu;       // hash of the GPU's UUID (0 none): equal = one GPU shared
  };
  std::vector<RankDev> devs(static_cast<size_t>(p));
  devs[static_cast<size_t>(c.rank())] =
      RankDev{c.config().cudaDevice, tpCode + 4 * exCode, gpuIdentity(c.config().cudaDevice)};
  c.bootstrap().allGather(devs.data(), sizeof(RankDev));
  bool allDevices = true, sameTransport = true, sharedGpu = false;
  for (int r = 0; r < p; ++r) {
    const RankDev& x = devs[static_cast<size_t>(r)];
    allDevices = allDevices && x.device >= 0;
    sameTransport = sameTransport && x.transport == tpCode + 4 * exCode;
    for (int q = 0; q < r; ++q)
      sharedGpu = sharedGpu || (x.gpu != 0 && devs[static_cast<size_t>(q)].gpu == x.gpu);
  }
  m.nblocks = e.deviceBlocks > 0 ? static_cast<int>(e.deviceBlocks)
              : sharedGpu        ? dev::kAutoBlocksSharedGpu
                                 : dev::kAutoBlocksOwnGpu;
  m.lay = dev::makeLayout(p, m.nblocks, static_cast<uint64_t>(e.deviceStagingBytes));
  std::vector<uint64_t> agree = {static_cast<uint64_t>(m.nblocks), m.lay.sub, m.lay.total,
                                 static_cast<uint64_t>(dev::kThreads)};
  m.device = c.config().cudaDevice;
  if (!sameTransport) {  // every rank sees the same table: all stop here
    m.reason = "COCCL_DEVICE_TRANSPORT or COCCL_DEVICE_EXACT differs across ranks";
    return d;
  }
  auto tryNccl = [&](const std::string& before) {
    if (!allDevices) {
      m.reason = before + "not every rank has a CUDA device";
      return;
    }
    m.nccl = std::make_unique<NcclDevicePath>(c, m.device);
    if (!m.nccl->usable()) {
      m.reason = before + m.nccl->reason();
      m.nccl.reset();
    }
  };
  if (tp == "nccl") {
    tryNccl("");
    return d;
  }
  m.region = std::make_unique<CudaIpcRegion>(c.bootstrap(), dev, m.lay.total, agree,
                                             c.topology().ranks[c.rank()].hostHash);
  if (!m.region->usable()) {
    m.reason = p > dev::kMaxRanks
                   ? format("%d ranks (the device path takes at most %d)", p, dev::kMaxRanks)
                   : m.region->reason();
    m.region.reset();
    if (tp == "auto") tryNccl("CUDA IPC: " + m.reason + "; NCCL: ");
    return d;
  }
  m.device = dev;
  DeviceGuard g(dev);
  void* hp = nullptr;
  COCCL_CUDA_CHECK(cudaHostAlloc(&hp, sizeof(dev::HostState), cudaHostAllocMapped));
  m.host = static_cast<dev::HostState*>(hp);
  std::memset(hp, 0, sizeof(dev::HostState));
  void* dp = nullptr;
  COCCL_CUDA_CHECK(cudaHostGetDevicePointer(&dp, hp, 0));
  m.hostDev = static_cast<dev::HostState*>(dp);
  dev::Ctx ctx{};
  ctx.rank = c.rank();
  ctx.nranks = p;
  ctx.nblocks = m.nblocks;
  const int64_t tms = c.config().timeoutMs;
  ctx.timeoutNs = static_cast<uint64_t>(tms > 0 ? tms : 300000) * 1000000ull;
  ctx.lay = m.lay;
  ctx.host = m.hostDev;
  for (int r = 0; r < p; ++r) ctx.base[r] = m.region->peer(r);
  void* cp = nullptr;
  COCCL_CUDA_CHECK(cudaMalloc(&cp, sizeof(dev::Ctx)));
  m.ctx = static_cast<dev::Ctx*>(cp);
  COCCL_CUDA_CHECK(cudaMemcpy(cp, &ctx, sizeof(ctx), cudaMemcpyHostToDevice));
  COCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&m.side, cudaStreamNonBlocking));
  for (cudaEvent_t& ev : m.joinIn)
    COCCL_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  COCCL_CUDA_CHECK(cudaEventCreateWithFlags(&m.joinOut, cudaEventDisableTiming));
  COCCL_INFO(kLogInit | kLogCuda,
             "device path on: device %d, %d blocks x %d threads, %llu-byte sub-slots, "
             "%llu-byte region",
             dev, m.nblocks, dev::kThreads, static_cast<unsigned long long>(m.lay.sub),
             static_cast<unsigned long long>(m.lay.total));
  // The uncompressed operations over the real NCCL: asked for, or (auto) when every rank has its
  // own GPU (NCCL refuses two ranks on one GPU; over NVLink its collectives beat coccl's exact
  // kernels, perf/RESULTS.md). NcclDevicePath agrees across ranks: usable everywhere or nowhere.
  if (p > 1 && (exCode == 2 || (exCode == 0 && !sharedGpu && allDevices))) {
    m.ncclExact = std::make_unique<NcclDevicePath>(c, dev, /*exactOnly=*/true);
    if (!m.ncclExact->usable()) {
      if (exCode == 2)
        COCCL_WARN("COCCL_DEVICE_EXACT=nccl: %s; coccl's kernels run the uncompressed "
                   "operations", m.ncclExact->reason().c_str());
      else
        COCCL_INFO(kLogInit, "uncompressed device operations on coccl's kernels (%s)",
                   m.ncclExact->reason().c_str());
      m.ncclExact.reset();
    }
  }
  return d;
}

bool DeviceComm::usable() const { return impl_->region != nullptr || impl_->nccl != nullptr; }
const std::string& DeviceComm::reason() const { return impl_->reason; }
int DeviceComm::device() const { return usable() ? impl_->device : -1; }

cocclResult_t DeviceComm::asyncError() const {
  if (impl_->nccl) return impl_->nccl->asyncError();
  if (impl_->ncclExact) {
    const cocclResult_t r = impl_->ncclExact->asyncError();
    if (r != cocclSuccess) return r;
  }
  if (!impl_->host) return cocclSuccess;
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(&impl_->host->error);
  switch (e) {
    case dev::kDevOk: return cocclSuccess;
    case dev::kDevTimeout: return cocclSystemError;
    case dev::kDevPeerFailed: return cocclRemoteError;
    default: return cocclInvalidUsage;
  }
}

void DeviceComm::abort() {
  Impl& m = *impl_;
  if (m.nccl) {
    m.aborted = true;
    m.nccl->abort();
    return;
  }
  if (!m.host || m.aborted) return;
  m.aborted = true;
  m.host->abort = 1u;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Release peers that wait on this rank even when no kernel of ours is running.
  int prev = -1;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
  if (cudaSetDevice(m.device) == cudaSuccess) {
    cudaError_t e = dev::launchPoison(m.ctx, m.nblocks, m.side);
    if (e != cudaSuccess) COCCL_WARN("abort: poison kernel: %s", cudaGetErrorString(e));
  }
  (void)cudaGetLastError();
  if (prev >= 0) (void)cudaSetDevice(prev);
  // NCCL's abort may wait for work queued behind this rank's (now released) kernels: last.
  if (m.ncclExact) m.ncclExact->abort();
}

void DeviceComm::quiesce() {
  Impl& m = *impl_;
  if (m.nccl) {
    if (!m.aborted) m.nccl->quiesce();
    return;
  }
  if (m.ncclExact && !m.aborted) m.ncclExact->quiesce();
  if (!m.region || !m.used) return;
  DeviceGuard g(m.device);
  COCCL_CUDA_CHECK(cudaDeviceSynchronize());
  if (asyncError() != cocclSuccess || m.aborted) return;
  // Wait until every peer acknowledged (free >= seq) everything this rank staged for it.
  const int p = m.comm.nranks(), nb = m.nblocks, me = m.comm.rank();
  const size_t n = static_cast<size_t>(p) * static_cast<size_t>(nb);
  std::vector<uint64_t> seq(n), fr(n);
  char* base = m.region->local();
  COCCL_CUDA_CHECK(cudaMemcpy(seq.data(), base + m.lay.offSeq, n * 8, cudaMemcpyDeviceToHost));
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(std::max<int64_t>(m.comm.config().timeoutMs, 1));
  for (;;) {
    COCCL_CUDA_CHECK(cudaMemcpy(fr.data(), base + m.lay.offFree, n * 8, cudaMemcpyDeviceToHost));
    bool done = true;
    for (int q = 0; q < p && done; ++q)
      for (int b = 0; b < nb && done; ++b) {
        const size_t i = static_cast<size_t>(q) * static_cast<size_t>(nb) + static_cast<size_t>(b);
        if (q != me && fr[i] < seq[i]) done = false;
      }
    if (done) return;
    m.comm.bootstrap().checkPeers();  // a dead peer: cocclRemoteError
    if (m.comm.abortFlag().load()) return;
    if (std::chrono::steady_clock::now() > deadline)
      COCCL_THROW(cocclSystemError,
                  "device path: peers did not consume this rank's staged data within "
                  "COCCL_TIMEOUT_MS (%lld ms)",
                  static_cast<long long>(m.comm.config().timeoutMs));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// ---- collectives ------------------------------------------------------------------------------

namespace {

cudaError_t launchReduceCodec(const dev::Ctx* ctx, const dev::ReduceArgs& a, int nb,
                              cudaStream_t s) {
  switch (a.dtype) {
    case cocclBfloat16: return dev::launchReduceCodecBf16(ctx, a, nb, s);
    case cocclFloat16: return dev::launchReduceCodecFp16(ctx, a, nb, s);
    default: return dev::launchReduceCodecFp32(ctx, a, nb, s);
  }
}

cudaError_t launchGatherCodec(const dev::Ctx* ctx, const dev::GatherArgs& a, int nb,
                              cudaStream_t s) {
  switch (a.dtype) {
    case cocclBfloat16: return dev::launchGatherCodecBf16(ctx, a, nb, s);
    case cocclFloat16: return dev::launchGatherCodecFp16(ctx, a, nb, s);
    default: return dev::launchGatherCodecFp32(ctx, a, nb, s);
  }
}

}  // namespace

void DeviceComm::allReduce(const void* in, void* out, size_t count, cocclDataType_t dt,
                           cocclRedOp_t op, const Codec* codec, cocclStream_t stream,
                           CollStats& stats) {
  Impl& m = *impl_;
  if (m.nccl) return m.nccl->allReduce(in, out, count, dt, op, codec, stream, stats);
  const int p = m.comm.nranks(), me = m.comm.rank();
  const size_t es = dtypeSize(dt);
  if (!codecOnDevice(codec)) codec = nullptr;
  if (!codec && m.exactOnNccl(dt))
    return m.ncclExact->allReduce(in, out, count, dt, op, nullptr, stream, stats);
  const CodecDesc desc = codec ? codec->deviceDesc() : CodecDesc{};
  const dev::ReduceArgs a = m.planner().reduce(dev::Coll::AllReduce, in, out, count,
                                               static_cast<int>(es), dt, op, 0,
                                               codec ? &desc : nullptr);
  size_t wire = 0;
  const std::vector<Range> shards = balancedShards(count, p, a.unit);
  for (int j = 0; j < p; ++j) {
    const size_t b = codec ? codec->encodedBytes(shards[j].count, dt) : shards[j].count * es;
    wire += j == me ? b * static_cast<size_t>(p - 1) : b;
  }
  setStats(stats, count * es, wire, codec, "two-shot");
  DeviceGuard g(m.device);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  m.launched(codec ? launchReduceCodec(m.ctx, a, a.nblocks, s)
                   : dev::launchReduceExact(m.ctx, a, a.nblocks, s),
             "AllReduce");
}

void DeviceComm::reduceScatter(const void* in, void* out, size_t recvcount, cocclDataType_t dt,
                               cocclRedOp_t op, const Codec* codec, cocclStream_t stream,
                               CollStats& stats) {
  Impl& m = *impl_;
  if (m.nccl) return m.nccl->reduceScatter(in, out, recvcount, dt, op, codec, stream, stats);
  const int p = m.comm.nranks();
  const size_t es = dtypeSize(dt);
  if (!codecOnDevice(codec)) codec = nullptr;
  if (!codec && m.exactOnNccl(dt))
    return m.ncclExact->reduceScatter(in, out, recvcount, dt, op, nullptr, stream, stats);
  const CodecDesc desc = codec ? codec->deviceDesc() : CodecDesc{};
  const dev::ReduceArgs a = m.planner().reduce(dev::Coll::ReduceScatter, in, out, recvcount,
                                               static_cast<int>(es), dt, op, 0,
                                               codec ? &desc : nullptr);
  const size_t b = codec ? codec->encodedBytes(recvcount, dt) : recvcount * es;
  setStats(stats, recvcount * static_cast<size_t>(p) * es, b * static_cast<size_t>(p - 1), codec,
           "two-shot");
  DeviceGuard g(m.device);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  m.launched(codec ? launchReduceCodec(m.ctx, a, a.nblocks, s)
                   : dev::launchReduceExact(m.ctx, a, a.nblocks, s),
             "ReduceScatter");
}

void DeviceComm::reduce(const void* in, void* out, size_t count, cocclDataType_t dt,
                        cocclRedOp_t op, int root, cocclStream_t stream, CollStats& stats) {
  Impl& m = *impl_;
  if (m.nccl) return m.nccl->reduce(in, out, count, dt, op, root, stream, stats);
  if (m.exactOnNccl(dt)) return m.ncclExact->reduce(in, out, count, dt, op, root, stream, stats);
  const int me = m.comm.rank();
  const size_t es = dtypeSize(dt);
  const dev::ReduceArgs a = m.planner().reduce(dev::Coll::Reduce, in, out, count,
                                               static_cast<int>(es), dt, op, root, nullptr);
  setStats(stats, count * es, me == root ? 0 : count * es, nullptr, "direct");
  DeviceGuard g(m.device);
  m.launched(dev::launchReduceExact(m.ctx, a, a.nblocks, reinterpret_cast<cudaStream_t>(stream)),
             "Reduce");
}

void DeviceComm::allGather(const void* in, void* out, size_t sendcount, cocclDataType_t dt,
                           const Codec* codec, cocclStream_t stream, CollStats& stats) {
  Impl& m = *impl_;
  if (m.nccl) return m.nccl->allGather(in, out, sendcount, dt, codec, stream, stats);
  const int p = m.comm.nranks();
  const size_t es = dtypeSize(dt);
  if (!codecOnDevice(codec)) codec = nullptr;
  if (!codec && m.exactOnNccl(dt))
    return m.ncclExact->allGather(in, out, sendcount, dt, nullptr, stream, stats);
  const CodecDesc desc = codec ? codec->deviceDesc() : CodecDesc{};
  const dev::GatherArgs a = m.planner().gather(dev::Coll::AllGather, in, out, sendcount,
                                               static_cast<int>(es), dt, 0,
                                               codec ? &desc : nullptr);
  const size_t b = codec ? codec->encodedBytes(sendcount, dt) : sendcount * es;
  setStats(stats, sendcount * static_cast<size_t>(p) * es, b * static_cast<size_t>(p - 1), codec,
           "direct");
  DeviceGuard g(m.device);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  m.launched(codec ? launchGatherCodec(m.ctx, a, a.nblocks, s)
                   : dev::launchGatherExact(m.ctx, a, a.nblocks, s),
             "AllGather");
}

void DeviceComm::broadcast(const void* in, void* out, size_t count, cocclDataType_t dt, int root,
                           cocclStream_t stream, CollStats& stats) {
  Impl& m = *impl_;
  if (m.nccl) return m.nccl->broadcast(in, out, count, dt, root, stream, stats);
  if (m.exactOnNccl(dt)) return m.ncclExact->broadcast(in, out, count, dt, root, stream, stats);
  const int p = m.comm.nranks(), me = m.comm.rank();
  const size_t bytes = count * dtypeSize(dt);
  const dev::GatherArgs a =
      m.planner().gather(dev::Coll::Broadcast, me == root ? in : nullptr, out, count,
                         static_cast<int>(dtypeSize(dt)), dt, root, nullptr);
  setStats(stats, bytes, me == root ? bytes * static_cast<size_t>(p - 1) : 0, nullptr, "direct");
  DeviceGuard g(m.device);
  m.launched(dev::launchGatherExact(m.ctx, a, a.nblocks, reinterpret_cast<cudaStream_t>(stream)),
             "Broadcast");
}

void DeviceComm::pointToPoint(const std::vector<P2POp>& ops, CollStats& stats) {
  Impl& m = *impl_;
  if (m.nccl) return m.nccl->pointToPoint(ops, stats);
  if (m.ncclExact) return m.ncclExact->pointToPoint(ops, stats);
  COCCL_CHECK_USAGE(ops.size() <= static_cast<size_t>(dev::kMaxP2P),
                    "a group holds %zu device sends/receives on one communicator (at most %d)",
                    ops.size(), dev::kMaxP2P);
  std::vector<dev::P2PMsg> msgs;
  size_t sent = 0;
  std::vector<cudaStream_t> streams;
  for (const P2POp& o : ops) {
    msgs.push_back(dev::P2PMsg{o.buf, o.bytes, o.peer, o.send ? 1 : 0});
    if (o.send) sent += o.bytes;
    cudaStream_t s = reinterpret_cast<cudaStream_t>(o.stream);
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(s);
  }
  dev::P2PArgs a;
  COCCL_CHECK_ARG(m.planner().p2p(msgs, &a), "send/receive too large");
  COCCL_CHECK_USAGE(streams.size() <= static_cast<size_t>(kEvents),
                    "a group of device sends/receives spans %zu streams (at most %d)",
                    streams.size(), kEvents);
  setStats(stats, sent, sent, nullptr, "p2p");
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

}  // namespace coccl
