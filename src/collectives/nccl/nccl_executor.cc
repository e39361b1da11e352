// The NCCL executor (nccl_executor.h): NCCL's own collectives for the exact operations, the
// staged codec pipeline (collectives/staged/staged_codec.h) with NCCL's grouped
// ncclSend/ncclRecv as its mover for the compressed ones, and ncclAllGather of encoded bytes
// for their gather stages.
#include "collectives/nccl/nccl_executor.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "codecs/codec.h"
#include "collectives/call_desc.h"
#include "collectives/staged/call_check.h"
#include "collectives/staged/staged_codec.h"
#include "core/agree.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "mem/cuda_check.h"
#include "transport/nccl/nccl_comm.h"

namespace coccl {
namespace {

constexpr size_t kNcclSlotChunks = 4;  // staging slot = this many COCCL_CHUNK_BYTES ...
constexpr int kNcclSlotChunksMaxRanks = 8;  // ... up to this many ranks, else one

class NcclMover final : public ByteMover {
 public:
  // `carried` (COCCL_NCCL_CALL_CHECK=1; null: none): compares the descriptors a call's first
  // exchange or gather carries (staged/call_check.h).
  NcclMover(NcclComm& c, int nranks, int rank, DeviceCallCheck* carried)
      : c_(c), p_(nranks), me_(rank), carried_(carried) {}
  void exchange(const std::vector<Xfer>& group, const CallDesc* agree, cudaStream_t s) override {
    grouped(agree, s, [&] { post(group, s); });
  }
  bool agreesInExchange() const override { return carried_ != nullptr; }
  // The staged pipeline's calls but the two-level ones carry their descriptors in heads: the
  // same NCCL operations as unchecked (staged/call_check.h).
  bool carriesInHeads() const override { return carried_ != nullptr; }
  void storeHeads(const CallDesc& d, const DescHeads& heads, cudaStream_t s) override {
    COCCL_CHECK_INTERNAL(carried_, "NCCL mover: no call check to carry a descriptor");
    headsDesc_ = d;
    heads_ = carried_->carry(d, &heads, s);
  }
  void compareHeads(cudaStream_t s) override { carried_->compare(headsDesc_, heads_, s); }
  bool hasAllGather() const override { return true; }
  void allGather(const void* send, void* recv, size_t bytes, cudaStream_t s) override {
    c_.allGather(send, recv, bytes, cocclUint8, s);
  }
  void abort() override { c_.abort(); }

 private:
  void post(const std::vector<Xfer>& group, cudaStream_t s) {
    for (const Xfer& x : group) {
      if (x.send)
        c_.send(x.buf, x.bytes, x.peer, s);
      else
        c_.recv(x.buf, x.bytes, x.peer, s);
    }
  }
  // One NCCL group of what `body` posts, after the descriptors where `agree` is set (so that
  // NCCL matches them first), compared after the group.
  template <class Body>
  void grouped(const CallDesc* agree, cudaStream_t s, const Body& body) {
    COCCL_CHECK_INTERNAL(!agree || carried_, "NCCL mover: no call check to carry a descriptor");
    DeviceCallCheck::Carried carried;
    if (agree) carried = carried_->carry(*agree, nullptr, s);
    c_.group([&] {
      for (int q = 0; agree && q < p_; ++q) {
        if (q == me_) continue;
        c_.send(carried.mine(), sizeof(CallDesc), q, s);
        c_.recv(carried.from(q), sizeof(CallDesc), q, s);
      }
      body();
    });
    if (agree) carried_->compare(*agree, carried, s);
  }

  NcclComm& c_;
  int p_, me_;
  DeviceCallCheck* carried_;
  CallDesc headsDesc_{};  // the call whose heads storeHeads stored (one at a time)
  DeviceCallCheck::Carried heads_;
};

}  // namespace

struct NcclExecutor::Impl {
  CommContext& comm;
  int device;
  int p, me;
  std::unique_ptr<NcclComm> tr;
  std::unique_ptr<NcclMover> mover;
  std::unique_ptr<StagedCodec> staged;  // null when exact-only
  std::unique_ptr<DeviceCallCheck> check;  // null where no call is checked
  // COCCL_NCCL_CALL_CHECK=2: every call, a round of its own before it; 1: the compressed
  // calls, carried by their first exchange (staged/call_check.h).
  bool checkEvery = false;
  size_t slotBytes = 0;
  bool takesDefaultExact = true;  // exact-only: also the calls no rule assigned

  Impl(CommContext& c, int dev) : comm(c), device(dev), p(c.nranks()), me(c.rank()) {}
  ~Impl() {  // also after a constructor that failed half-way
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
    if (device >= 0) (void)cudaSetDevice(device);
    tr.reset();      // ncclCommDestroy (or abort) before the buffers NCCL may reference go
    staged.reset();  // its stream, events and staging
    check.reset();
    if (prev >= 0) (void)cudaSetDevice(prev);
  }
};

NcclExecutor::NcclExecutor(CommContext& c, int device) : impl_(std::make_unique<Impl>(c, device)) {}

std::unique_ptr<NcclExecutor> NcclExecutor::probe(CommContext& c, int device, bool exactOnly,
                                                  std::string* why) {
  std::unique_ptr<NcclExecutor> x(new NcclExecutor(c, device));
  Impl& m = *x->impl_;
  DeviceGuard g(device);
  m.tr = std::make_unique<NcclComm>(c.bootstrap());  // agrees across ranks itself
  if (!m.tr->usable()) {
    *why = "NCCL transport: " + m.tr->reason();
    m.tr.reset();  // nothing to quiesce in ~NcclExecutor
    return nullptr;
  }
  // Pieces of 4 x COCCL_CHUNK_BYTES of payload up to 8 ranks (the staging grows with the ranks:
  // 2 (3p + 1) + 4 slots): every NCCL call over a link-bound path has a fixed cost that 1 MiB
  // pieces do not hide (one-shot bf16 at 2 ranks, one H200 over sockets: 1.45-1.71x NCCL's
  // AllReduce with 1 MiB pieces, 1.57-1.70x with 4 MiB; fp32 2.25-3.02x vs 2.40-3.76x;
  // perf/RESULTS.md 2026-12-02).
  const size_t mult = m.p <= kNcclSlotChunksMaxRanks ? kNcclSlotChunks : 1;
  m.slotBytes = mult * static_cast<size_t>(std::max<int64_t>(c.config().chunkBytes, 4096));
  std::string failure;
  try {
    // COCCL_NCCL_CALL_CHECK: 1 checks the compressed calls (none in an exact-only executor),
    // in their first exchange; 2 every call, each before it.
    const int level = c.config().ncclCallCheck;
    m.checkEvery = level >= 2;
    if (level >= 2 || (level == 1 && !exactOnly))
      m.check = std::make_unique<DeviceCallCheck>(m.p, m.me);
    m.mover = std::make_unique<NcclMover>(*m.tr, m.p, m.me, level == 1 ? m.check.get() : nullptr);
    if (!exactOnly) {
      m.staged = std::make_unique<StagedCodec>(m.p, m.me, m.slotBytes, *m.mover, "nccl",
                                               stagedAllReduceAlgo(c.config().algo));
      // "hier:" entries: two levels in the host's chunks (bitwise the host path's results).
      m.staged->setTwoLevel(c.ranksPerNode(),
                            static_cast<size_t>(std::max<int64_t>(c.config().chunkBytes, 1)),
                            c.config().twoLevelPipeline);
    }
  } catch (const Error& e) {
    failure = e.what();
  }
  // Every rank must have its staging, and the same slot size (the pieces and the byte counts
  // of every send and receive follow from it): all agree, or the executor is off everywhere.
  std::string reason = agree(c.bootstrap(), failure);
  if (reason.empty())  // exact-only: no slots (0 everywhere)
    reason = agreeValues(c.bootstrap(),
                         {{"COCCL_CHUNK_BYTES", exactOnly ? 0 : m.slotBytes},
                          {"COCCL_NCCL_CALL_CHECK",
                           static_cast<uint64_t>(c.config().ncclCallCheck)},
                          // (COCCL_CHUNK_BYTES and COCCL_RANKS_PER_NODE, which the two-level
                          // calls' pieces follow from: agreed by the communicator at init)
                          {"COCCL_TWO_LEVEL_PIPELINE", c.config().twoLevelPipeline ? 1u : 0u}});
  if (!reason.empty()) {
    *why = "NCCL executor: " + reason;
    m.staged.reset();
    m.check.reset();
    m.tr.reset();  // ncclCommDestroy now; nothing to quiesce in ~NcclExecutor
    return nullptr;
  }
  if (exactOnly)
    COCCL_INFO(kLogInit | kLogCuda, "uncompressed device operations over NCCL %d: device %d",
               m.tr->version(), device);
  else
    COCCL_INFO(kLogInit | kLogCuda,
               "NCCL executor on: NCCL %d, device %d, %zu-byte slots (%zu KiB staging)",
               m.tr->version(), device, m.slotBytes, m.staged->stagingBytes() >> 10);
  return x;
}

NcclExecutor::~NcclExecutor() {
  Impl& m = *impl_;
  if (m.tr && m.staged && asyncError() == cocclSuccess) {
    try {
      quiesce();
    } catch (const std::exception& e) {
      COCCL_WARN("NCCL executor teardown: %s", e.what());
      m.tr->abort();
    }
  }
  // ~Impl frees the staging, then the NCCL communicator.
}

int NcclExecutor::cudaDevice() const { return impl_->device; }

void NcclExecutor::setTakesDefaultExact(bool on) {
  impl_->takesDefaultExact = on;
}

bool NcclExecutor::supports(const CollRequest& r) const {
  if (r.mem != MemKind::Device) return false;
  const Impl& m = *impl_;
  // Send/Recv move bytes only: every type. The exact collectives: not the fp8 types.
  if (!r.codec) {
    if (m.staged) return true;  // the executor of every device operation
    if (r.exact == ExactPath::Coccl || (r.exact == ExactPath::Default && !m.takesDefaultExact))
      return false;  // coccl's kernels (the CUDA IPC executor after this one) run it
    // Exact-only beside CUDA IPC: Send/Recv move bytes (every type); the collectives not of an
    // fp8 type (NCCL has those from 2.24 on sm_90 only; coccl's kernels everywhere).
    return r.isP2P() || (r.dt != cocclFloat8e4m3 && r.dt != cocclFloat8e5m2);
  }
  return m.staged && m.staged->supports(r);
}

cocclResult_t NcclExecutor::asyncError() const {
  if (impl_->check && impl_->check->error() != cocclSuccess) return impl_->check->error();
  return impl_->tr ? impl_->tr->asyncError() : cocclSuccess;
}

std::string NcclExecutor::asyncErrorMessage() const {
  if (!impl_->check || impl_->check->error() == cocclSuccess) return "";
  return "device path (NCCL): " + impl_->check->message() +
         (impl_->checkEvery ? " (found before the call ran"
                            : " (found in the call's first exchange") +
         "; NCCL's kernels of the call were not held back and may have written recvbuff; the "
         "communicator is broken: destroy or abort it)";
}

void NcclExecutor::abort() {
  if (impl_->tr) impl_->tr->abort();
}

void NcclExecutor::quiesce() {
  Impl& m = *impl_;
  if (!m.tr) return;
  DeviceGuard g(m.device);
  const int64_t tms = std::max<int64_t>(m.comm.config().timeoutMs, 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(tms);
  while (m.staged) {
    cudaError_t q = cudaStreamQuery(m.staged->sideStream());
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) COCCL_CUDA_CHECK(q);
    cocclResult_t e = m.tr->asyncError();
    if (e != cocclSuccess)
      COCCL_THROW(e, "NCCL executor: the NCCL communicator failed (%s)", resultString(e));
    if (std::chrono::steady_clock::now() > deadline)
      COCCL_THROW(cocclSystemError,
                  "NCCL executor: transfers did not finish within COCCL_TIMEOUT_MS (%lld ms)",
                  static_cast<long long>(tms));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  COCCL_CUDA_CHECK(cudaDeviceSynchronize());
}

void NcclExecutor::run(const CollRequest& r, CollStats& stats) {
  Impl& m = *impl_;
  DeviceGuard g(m.device);
  // Wire bytes: the payload's (as over CUDA IPC, not the descriptors).
  if (m.check && m.checkEvery)
    m.check->check(makeCallDesc(r), *m.mover, static_cast<cudaStream_t>(r.stream));
  // (under 1 the compressed calls' first exchange carries the descriptor)
  if (r.codec) return m.staged->run(r, stats, m.check && !m.checkEvery);
  const size_t bytes = r.count * dtypeSize(r.dt);
  const int p = m.p;
  stats.algorithm = "nccl";
  switch (r.coll) {
    case Coll::AllReduce:  // NCCL's ring: 2 (p-1)/p of the message
      stats.wireBytesSent = bytes * 2 * static_cast<size_t>(p - 1) / static_cast<size_t>(p);
      return m.tr->allReduce(r.in, r.out, r.count, r.dt, r.op, r.stream);
    case Coll::ReduceScatter:
      stats.wireBytesSent = directWireBytes(bytes, p);
      return m.tr->reduceScatter(r.in, r.out, r.count, r.dt, r.op, r.stream);
    case Coll::AllGather:
      stats.wireBytesSent = directWireBytes(bytes, p);
      return m.tr->allGather(r.in, r.out, r.count, r.dt, r.stream);
    case Coll::Broadcast:
      stats.wireBytesSent = bytes;
      return m.tr->broadcast(r.in, r.out, r.count, r.dt, r.root, r.stream);
    case Coll::Reduce:
      stats.wireBytesSent = m.me == r.root ? 0 : bytes;
      return m.tr->reduce(r.in, r.out, r.count, r.dt, r.op, r.root, r.stream);
    default: COCCL_THROW(cocclInternalError, "NCCL executor: Send/Recv go through runP2P");
  }
}

void NcclExecutor::runP2P(const std::vector<CollRequest>& ops, CollStats& stats) {
  Impl& m = *impl_;
  size_t sent = 0;
  for (const CollRequest& o : ops)
    if (o.coll == Coll::Send) sent += o.count * dtypeSize(o.dt);
  stats.wireBytesSent = sent;
  stats.algorithm = "p2p/nccl";
  DeviceGuard g(m.device);
  m.tr->group([&] {
    for (const CollRequest& o : ops) {
      const size_t bytes = o.count * dtypeSize(o.dt);
      if (o.coll == Coll::Send)
        m.tr->send(o.in, bytes, o.peer(), o.stream);
      else
        m.tr->recv(o.out, bytes, o.peer(), o.stream);
    }
  });
}

}  // namespace coccl
