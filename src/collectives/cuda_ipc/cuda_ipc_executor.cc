// The CUDA IPC executor (cuda_ipc_executor.h): staging setup, probe, errors, abort and teardown;
// the calls (planning, kernel launch) in cuda_ipc_run.cc, the shared state in executor_impl.h.
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
#include "collectives/cuda_ipc/cuda_ipc_executor.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "codecs/abi/registry.h"
#include "collectives/call_desc.h"
#include "collectives/cuda_ipc/dev_types.h"
#include "collectives/cuda_ipc/executor_impl.h"
#include "collectives/cuda_ipc/launch.h"
#include "collectives/cuda_ipc/residency.h"
#include "collectives/p2p_header.h"
#include "collectives/staged/staged_codec.h"
#include "core/agree.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "mem/cuda_check.h"
#include "transport/cuda_ipc/ipc_region.h"

namespace coccl {
namespace {

// Whether a registered codec needs the staged pipeline (a plug-in with device launchers). The
// same on every rank: the Communicator checked that all ranks registered the same codecs.
bool pluginDeviceCodecs() {
  for (const CodecEntry& e : registeredCodecs())
    if (e.source != "built-in" && (e.desc->capabilities & COCCL_CODEC_CAP_DEVICE)) return true;
  return false;
}

}  // namespace

CudaIpcExecutor::Impl::~Impl() {
  if (device < 0) return;
  if (tallied) dev::removeCommBlocks(device, nblocks);
  int prev = -1;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
  (void)cudaSetDevice(device);
  if (side) COCCL_CUDA_WARN(cudaStreamSynchronize(side));
  staged.reset();
  for (cudaEvent_t& e : joinIn)
    if (e) COCCL_CUDA_WARN(cudaEventDestroy(e));
  if (joinOut) COCCL_CUDA_WARN(cudaEventDestroy(joinOut));
  if (side) COCCL_CUDA_WARN(cudaStreamDestroy(side));
  if (ctx) COCCL_CUDA_WARN(cudaFree(ctx));  // waits for this process's kernels
  if (phases) COCCL_CUDA_WARN(cudaFree(phases));
  region.reset();
  if (host) COCCL_CUDA_WARN(cudaFreeHost(host));
  if (prev >= 0) (void)cudaSetDevice(prev);
}

CudaIpcExecutor::CudaIpcExecutor(CommContext& ctx) : impl_(std::make_unique<Impl>(ctx)) {}

CudaIpcExecutor::~CudaIpcExecutor() {
  if (!impl_ || !impl_->region) return;
  Impl& m = *impl_;
  // A region must not be freed while a peer still reads it or maps it: wait until the peers
  // consumed what this rank staged, unmap theirs, then meet them (bootstrap barrier) before
  // freeing ours. After an abort or a failure: no waiting (peers are gone or were told).
  const bool healthy = !m.aborted && asyncError() == cocclSuccess && !m.comm.aborted() &&
                       !m.comm.bootstrap().aborted();
  if (healthy) {
    try {
      quiesce();
    } catch (const std::exception& e) {
      COCCL_WARN("CUDA IPC executor teardown: %s", e.what());
    }
  }
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
      COCCL_WARN("CUDA IPC executor teardown: peers did not all reach destroy: %s", e.what());
    }
  }
}

std::unique_ptr<CudaIpcExecutor> CudaIpcExecutor::probe(CommContext& c, int dev, int nblocks,
                                                        std::string* why) {
  std::unique_ptr<CudaIpcExecutor> x(new CudaIpcExecutor(c));
  Impl& m = *x->impl_;
  const int p = c.nranks();
  if (p > dev::kMaxRanks) dev = -1;  // every rank sees the same p: all agree
  m.nblocks = nblocks;
  m.lay = dev::makeLayout(p, m.nblocks, static_cast<uint64_t>(c.config().deviceStagingBytes));
  std::vector<uint64_t> agree = {static_cast<uint64_t>(m.nblocks), m.lay.sub, m.lay.total,
                                 static_cast<uint64_t>(dev::kThreads)};
  if (pluginDeviceCodecs()) {  // the staged pipeline's pieces follow from the slot size
    agree.push_back(static_cast<uint64_t>(std::max<int64_t>(c.config().chunkBytes, 4096)));
    agree.push_back(c.config().stagedCallCheck ? 1u : 0u);  // its per-call check (both or none)
  }
  // (Thread ranks sharing one GPU's context under lazy module loading are refused there: the
  // delta, codec and poison kernels and a plug-in's load on first launch; ipc_region.h.)
  m.region = std::make_unique<CudaIpcRegion>(c.bootstrap(), dev, m.lay.total, agree,
                                             c.topology().ranks[c.rank()].hostHash);
  if (!m.region->usable()) {
    *why = p > dev::kMaxRanks
               ? format("%d ranks (the device path takes at most %d)", p, dev::kMaxRanks)
               : m.region->reason();
    m.region.reset();
    return nullptr;
  }
  m.device = dev;
  // The rest may fail on one rank (out of memory...): every rank learns it, and all turn the
  // executor off together (its destructor meets the others in the same barrier).
  std::string failure;
  try {
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
    if (c.config().phaseTimes) {
      const size_t bytes = sizeof(uint64_t) * dev::kMaxBlocks * dev::kPhaseWords;
      void* pp = nullptr;
      COCCL_CUDA_CHECK(cudaMalloc(&pp, bytes));
      m.phases = static_cast<uint64_t*>(pp);
      COCCL_CUDA_CHECK(cudaMemset(pp, 0, bytes));
      ctx.phases = m.phases;
    }
    void* cp = nullptr;
    COCCL_CUDA_CHECK(cudaMalloc(&cp, sizeof(dev::Ctx)));
    m.ctx = static_cast<dev::Ctx*>(cp);
    COCCL_CUDA_CHECK(cudaMemcpy(cp, &ctx, sizeof(ctx), cudaMemcpyHostToDevice));
    COCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&m.side, cudaStreamNonBlocking));
    for (cudaEvent_t& ev : m.joinIn)
      COCCL_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    COCCL_CUDA_CHECK(cudaEventCreateWithFlags(&m.joinOut, cudaEventDisableTiming));
    if (pluginDeviceCodecs()) {
      m.mover = std::make_unique<IpcMover>(m);
      const size_t slot = static_cast<size_t>(std::max<int64_t>(c.config().chunkBytes, 4096));
      m.staged = std::make_unique<StagedCodec>(p, c.rank(), slot, *m.mover, "cuda_ipc",
                                               stagedAllReduceAlgo(c.config().algo));
      m.stagedAgree = c.config().stagedCallCheck;
    }
  } catch (const Error& e) {
    failure = e.what();
  }
  const std::string reason = coccl::agree(c.bootstrap(), failure);
  if (!reason.empty()) {
    *why = "CUDA IPC executor: " + reason;
    return nullptr;
  }
  const int cap = dev::residentBlocks(dev);
  const int held = dev::addCommBlocks(dev, m.nblocks);
  m.tallied = true;
  COCCL_INFO(kLogInit | kLogCuda,
             "CUDA IPC executor on: device %d, %d blocks x %d threads, %llu-byte sub-slots, "
             "%llu-byte region; the device holds %d blocks of coccl's kernels at once, this "
             "process's communicators on it %d",
             dev, m.nblocks, dev::kThreads, static_cast<unsigned long long>(m.lay.sub),
             static_cast<unsigned long long>(m.lay.total), cap, held);
  static std::atomic<bool> warned{false};
  if (cap > 0 && held > cap && !warned.exchange(true))
    COCCL_WARN("the CUDA IPC communicators of this process hold %d blocks on device %d, which "
               "runs %d of coccl's kernel blocks at once: collectives of different "
               "communicators in flight together can wait for blocks that never become "
               "resident, until COCCL_TIMEOUT_MS; give each communicator COCCL_DEVICE_BLOCKS "
               "so that those running at once fit, or order their collectives on one stream",
               held, dev, cap);
  return x;
}

int CudaIpcExecutor::cudaDevice() const { return impl_->device; }

bool CudaIpcExecutor::phaseTimes(std::vector<uint64_t>* words) const {
  const Impl& m = *impl_;
  if (!m.phases) return false;
  std::vector<uint64_t> all(static_cast<size_t>(dev::kMaxBlocks) * dev::kPhaseWords);
  DeviceGuard g(m.device);
  COCCL_CUDA_CHECK(
      cudaMemcpy(all.data(), m.phases, all.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  words->assign(dev::kPhaseWords, 0);
  for (size_t i = 0; i < all.size(); ++i) (*words)[i % dev::kPhaseWords] += all[i];
  return true;
}

bool CudaIpcExecutor::supports(const CollRequest& r) const {
  if (r.mem != MemKind::Device || r.interCodec) return false;  // two-level: host or NCCL
  if (!r.codec || fusedCodec(r.codec)) return true;
  return impl_->staged && impl_->staged->supports(r);
}

cocclResult_t CudaIpcExecutor::asyncError() const {
  if (!impl_->host) return cocclSuccess;
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(&impl_->host->error);
  switch (e) {
    case dev::kDevOk: return cocclSuccess;
    case dev::kDevTimeout: return cocclSystemError;
    case dev::kDevPeerFailed: return cocclRemoteError;
    default: return cocclInvalidUsage;
  }
}

std::string CudaIpcExecutor::asyncErrorMessage() const {
  if (!impl_->host) return "";
  const dev::HostState& h = *impl_->host;
  const uint32_t e = *reinterpret_cast<const volatile uint32_t*>(&h.error);
  if (e == dev::kDevTimeout)
    return format("device path (CUDA IPC): block %d waited for rank %d longer than "
                  "COCCL_TIMEOUT_MS (%lld ms): that rank did not make the same call, died, or "
                  "its kernel's blocks could not all become resident (this GPU holds %d blocks "
                  "of coccl's kernels at once; %d blocks per kernel here: ranks that share a GPU "
                  "and communicators with collectives in flight together must fit, see "
                  "COCCL_DEVICE_BLOCKS)",
                  h.errBlock, h.errPeer, static_cast<long long>(impl_->comm.config().timeoutMs),
                  dev::residentBlocks(impl_->device), impl_->nblocks);
  if (e != dev::kDevMismatch) return "";
  std::atomic_thread_fence(std::memory_order_acquire);  // the descriptors after the error word
  if (h.mine.w[dev::kPairMagic] == dev::kP2PPairMagic) {
    P2PPairCounts mine, theirs;
    std::memcpy(&mine, &h.mine.w[dev::kPairSends], sizeof(mine));
    std::memcpy(&theirs, &h.theirs.w[dev::kPairSends], sizeof(theirs));
    const std::string why = h.theirs.w[dev::kPairMagic] == dev::kP2PPairMagic
                                ? p2pPairMismatch(mine, impl_->comm.rank(), theirs, h.errPeer)
                                : format(
                                      "rank %d did not run the matching device Send/Recv "
                                      "(other bytes where its pair descriptor belongs)",
                                      h.errPeer);
    return "device path (CUDA IPC): " + why +
           " (no data moved; the communicator is broken: destroy or abort it)";
  }
  const CallDesc mine = callDescFromBytes(&h.mine);
  const CallDesc theirs = callDescFromBytes(&h.theirs);
  const std::string why = callDescPairMismatch(mine, impl_->comm.rank(), theirs, h.errPeer);
  if (h.errFrom == dev::kAgreeInStagedExchange)
    return "device path (CUDA IPC, staged codec pipeline): " + why +
           " (found in the call's first exchange, whose pieces went to staging buffers only; the "
           "codec's kernels on the caller's stream were not held back and its decode may have "
           "written recvbuff; the communicator is broken: destroy or abort it)";
  return "device path (CUDA IPC): " + why +
         " (no data moved; the communicator is broken: destroy or abort it)";
}

void CudaIpcExecutor::abort() {
  Impl& m = *impl_;
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
}

void CudaIpcExecutor::quiesce() {
  Impl& m = *impl_;
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
    if (m.comm.aborted()) return;
    if (std::chrono::steady_clock::now() > deadline)
      COCCL_THROW(cocclSystemError,
                  "device path: peers did not consume this rank's staged data within "
                  "COCCL_TIMEOUT_MS (%lld ms)",
                  static_cast<long long>(m.comm.config().timeoutMs));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace coccl
