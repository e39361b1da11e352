#include "transport/nccl/nccl_comm.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <shared_mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/agree.h"
#include "core/bootstrap.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "transport/nccl/nccl_abi.h"
#include "transport/nccl/nccl_library.h"

namespace coccl {
namespace {

// The real NCCL's functions this transport calls: the shared table (nccl_functions.inc) that
// the loader fills once; load() copies it and checks that the ones needed here are present.
struct Api : nccl::Functions {
  bool load(const nccl::Library& lib, std::string* why) {
    static_cast<nccl::Functions&>(*this) = lib;
    for (auto [fn, name] : {std::pair<bool, const char*>{!!ncclGetUniqueId, "ncclGetUniqueId"},
                            {!!ncclCommInitRankConfig, "ncclCommInitRankConfig"},
                            {!!ncclCommFinalize, "ncclCommFinalize"},
                            {!!ncclCommDestroy, "ncclCommDestroy"},
                            {!!ncclCommAbort, "ncclCommAbort"},
                            {!!ncclCommGetAsyncError, "ncclCommGetAsyncError"},
                            {!!ncclGetErrorString, "ncclGetErrorString"},
                            {!!ncclGetLastError, "ncclGetLastError"},
                            {!!ncclGroupStart, "ncclGroupStart"},
                            {!!ncclGroupEnd, "ncclGroupEnd"},
                            {!!ncclSend, "ncclSend"},
                            {!!ncclRecv, "ncclRecv"},
                            {!!ncclAllReduce, "ncclAllReduce"},
                            {!!ncclReduceScatter, "ncclReduceScatter"},
                            {!!ncclAllGather, "ncclAllGather"},
                            {!!ncclBroadcast, "ncclBroadcast"},
                            {!!ncclReduce, "ncclReduce"}}) {
      if (!fn) {
        *why = std::string("the real NCCL lacks ") + name;
        return false;
      }
    }
    return true;
  }
};

// What every rank contributes to the agreement at creation.
struct Hello {
  int32_t status;  // 0: NCCL loaded (rank 0: and its unique id made)
  int32_t version;
  ncclUniqueId id;  // rank 0's
};

}  // namespace

// Depth of NcclComm::group on this thread: its sends and receives run under the group's
// hold of the communicator.
thread_local int t_groupDepth = 0;

struct NcclComm::Impl {
  Api api;
  ncclComm_t comm = nullptr;
  int version = 0;
  int64_t timeoutMs = env_default::timeoutMs;
  std::string reason;
  std::atomic<bool> aborted{false};
  mutable std::shared_timed_mutex
      mu;  // shared: an operation inside NCCL; exclusive: abort, destroy

  // Holds the communicator for one operation (nothing inside a group: the group holds it).
  struct Hold {
    std::shared_lock<std::shared_timed_mutex> lock;
    explicit Hold(Impl& m) {
      if (t_groupDepth == 0) lock = std::shared_lock<std::shared_timed_mutex>(m.mu);
    }
  };

  void check(ncclResult_t r, const char* what) const {
    if (r == ncclSuccess) return;
    const char* last = api.ncclGetLastError ? api.ncclGetLastError(comm) : nullptr;
    COCCL_THROW(static_cast<cocclResult_t>(r), "NCCL transport: %s: %s%s%s", what,
                api.ncclGetErrorString ? api.ncclGetErrorString(r) : "error", last && *last ? ": " : "",
                last ? last : "");
  }
  void live(const char* what) const {
    COCCL_CHECK_USAGE(!aborted.load() && comm, "NCCL transport: %s after abort", what);
  }
  // One NCCL call `fn` (named `name`) on the live communicator, held against abort.
  template <class Fn>
  void call(const char* name, Fn fn) {
    Hold hold(*this);
    live(name);
    check(fn(), name);
  }
};

NcclComm::NcclComm(Bootstrap& bs) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.timeoutMs = std::max<int64_t>(bs.timeoutMs(), 1);
  const int p = bs.nranks(), me = bs.rank();
  std::vector<Hello> all(static_cast<size_t>(p));
  Hello& mine = all[static_cast<size_t>(me)];
  std::memset(&mine, 0, sizeof(mine));
  std::string why;
  const nccl::Library* lib = nccl::library(&why);
  mine.status = lib && m.api.load(*lib, &why) ? 0 : 1;
  if (mine.status == 0) {
    mine.version = lib->version;
    if (me == 0) {
      ncclResult_t r = m.api.ncclGetUniqueId(&mine.id);
      if (r != ncclSuccess) {
        mine.status = 2;
        why = std::string("ncclGetUniqueId: ") + m.api.ncclGetErrorString(r);
      }
    }
  }
  bs.allGather(all.data(), sizeof(Hello));  // throws on a dead peer: the caller's init fails
  // The same reason on every rank (the first rank that could not start NCCL, in its words).
  m.reason = agree(bs, mine.status != 0 ? why : "");
  if (!m.reason.empty()) return;
  m.version = lib->version;
  ncclResult_t r = m.api.ncclCommInitRankConfig(&m.comm, p, all[0].id, me, nullptr);
  if (r != ncclSuccess) {
    const char* last = m.api.ncclGetLastError(nullptr);
    why = format("ncclCommInitRankConfig: %s%s%s", m.api.ncclGetErrorString(r),
                 last && *last ? ": " : "", last ? last : "");
    m.comm = nullptr;
  }
  // Every rank learns whether every init succeeded, so that all end in the same state.
  m.reason = agree(bs, r == ncclSuccess ? "" : why);
  if (!m.reason.empty()) {
    if (m.comm) m.api.ncclCommAbort(m.comm);
    m.comm = nullptr;
    return;
  }
  COCCL_INFO(kLogInit | kLogNet, "NCCL transport on: NCCL %d, rank %d of %d", m.version, me, p);
}

NcclComm::~NcclComm() {
  Impl& m = *impl_;
  if (!m.comm || m.aborted.load()) return;  // abort() freed it
  std::unique_lock<std::shared_timed_mutex> lock(m.mu);
  ncclResult_t st = ncclSuccess;
  const bool healthy = m.api.ncclCommGetAsyncError(m.comm, &st) == ncclSuccess && st == ncclSuccess;
  // Healthy: finalize (flushes this rank's operations, which peers may still be reading), then
  // destroy; otherwise abort.
  ncclResult_t r = healthy ? m.api.ncclCommFinalize(m.comm) : ncclSuccess;
  r = healthy && r == ncclSuccess ? m.api.ncclCommDestroy(m.comm) : m.api.ncclCommAbort(m.comm);
  if (r != ncclSuccess) COCCL_WARN("NCCL transport teardown: %s", m.api.ncclGetErrorString(r));
}

bool NcclComm::usable() const {
  return impl_->comm != nullptr;
}
const std::string& NcclComm::reason() const {
  return impl_->reason;
}
int NcclComm::version() const {
  return impl_->version;
}

void NcclComm::group(const std::function<void()>& post) {
  Impl& m = *impl_;
  Impl::Hold hold(m);
  m.live("group");
  m.check(m.api.ncclGroupStart(), "ncclGroupStart");
  ++t_groupDepth;
  try {
    post();
  } catch (...) {
    --t_groupDepth;
    (void)m.api.ncclGroupEnd();  // what was posted runs; the first error is the one reported
    throw;
  }
  --t_groupDepth;
  m.check(m.api.ncclGroupEnd(), "ncclGroupEnd");
}

void NcclComm::send(const void* buf, size_t bytes, int peer, cocclStream_t s) {
  Impl& m = *impl_;
  m.call("ncclSend", [&] { return m.api.ncclSend(buf, bytes, ncclUint8, peer, m.comm, s); });
}

void NcclComm::recv(void* buf, size_t bytes, int peer, cocclStream_t s) {
  Impl& m = *impl_;
  m.call("ncclRecv", [&] { return m.api.ncclRecv(buf, bytes, ncclUint8, peer, m.comm, s); });
}

namespace {
ncclDataType_t nt(cocclDataType_t dt) {
  return static_cast<ncclDataType_t>(dt);
}
ncclRedOp_t nop(cocclRedOp_t op) {
  return static_cast<ncclRedOp_t>(op);
}
}  // namespace

void NcclComm::allReduce(const void* in, void* out, size_t count, cocclDataType_t dt,
                              cocclRedOp_t op, cocclStream_t s) {
  Impl& m = *impl_;
  m.call("ncclAllReduce",
         [&] { return m.api.ncclAllReduce(in, out, count, nt(dt), nop(op), m.comm, s); });
}

void NcclComm::reduceScatter(const void* in, void* out, size_t recvcount, cocclDataType_t dt,
                                  cocclRedOp_t op, cocclStream_t s) {
  Impl& m = *impl_;
  m.call("ncclReduceScatter",
         [&] { return m.api.ncclReduceScatter(in, out, recvcount, nt(dt), nop(op), m.comm, s); });
}

void NcclComm::allGather(const void* in, void* out, size_t sendcount, cocclDataType_t dt,
                              cocclStream_t s) {
  Impl& m = *impl_;
  m.call("ncclAllGather", [&] { return m.api.ncclAllGather(in, out, sendcount, nt(dt), m.comm, s); });
}

void NcclComm::broadcast(const void* in, void* out, size_t count, cocclDataType_t dt, int root,
                              cocclStream_t s) {
  Impl& m = *impl_;
  m.call("ncclBroadcast", [&] { return m.api.ncclBroadcast(in, out, count, nt(dt), root, m.comm, s); });
}

void NcclComm::reduce(const void* in, void* out, size_t count, cocclDataType_t dt,
                           cocclRedOp_t op, int root, cocclStream_t s) {
  Impl& m = *impl_;
  m.call("ncclReduce",
         [&] { return m.api.ncclReduce(in, out, count, nt(dt), nop(op), root, m.comm, s); });
}

cocclResult_t NcclComm::asyncError() const {
  const Impl& m = *impl_;
  if (!m.comm) return cocclSuccess;
  // Cheap and never blocking: while abort holds the communicator, it is being aborted.
  if (m.aborted.load()) return cocclInvalidUsage;
  std::shared_lock<std::shared_timed_mutex> lock(m.mu, std::defer_lock);
  if (t_groupDepth == 0) {  // inside a group this thread already holds it
    for (int i = 0; i < 3 && !lock.try_lock(); ++i) std::this_thread::yield();
    // Not available: abort (which set the flag first) or destruction holds it.
    if (!lock.owns_lock()) return m.aborted.load() ? cocclInvalidUsage : cocclSuccess;
  }
  ncclResult_t st = ncclSuccess;
  if (m.api.ncclCommGetAsyncError(m.comm, &st) != ncclSuccess) return cocclInternalError;
  return st == ncclInProgress ? cocclSuccess : static_cast<cocclResult_t>(st);
}

void NcclComm::abort() {
  Impl& m = *impl_;
  if (!m.comm || m.aborted.exchange(true)) return;  // new operations now fail at live()
  std::unique_lock<std::shared_timed_mutex> lock(m.mu, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::milliseconds(m.timeoutMs)))
    COCCL_WARN(
        "NCCL transport abort: an operation is still inside NCCL after %lld ms; aborting "
        "under it",
        static_cast<long long>(m.timeoutMs));
  ncclResult_t r = m.api.ncclCommAbort(m.comm);  // m.comm stays set (other threads read it)
  if (r != ncclSuccess) COCCL_WARN("NCCL transport abort: %s", m.api.ncclGetErrorString(r));
}

}  // namespace coccl
