// Communicators: creation (the coccl half from the caller's unique id, which is a coccl id; the
// real NCCL's half from an id that rank 0 makes and broadcasts over coccl), finalize / destroy /
// abort / revoke, queries and the asynchronous error state.
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "shim.h"

namespace shim {

// ---- configs ---------------------------------------------------------------------------------
namespace {
template <class T>
bool has(const std::vector<unsigned char>& b, const T* fieldInStruct, const ncclConfig_t* base) {
  size_t end = reinterpret_cast<const unsigned char*>(fieldInStruct) -
               reinterpret_cast<const unsigned char*>(base) + sizeof(T);
  return b.size() >= end;
}
}  // namespace

ncclResult_t ConfigCopy::set(const ncclConfig_t* user) {
  present = false;
  bytes.clear();
  netName.clear();
  commName.clear();
  blocking = 1;
  if (!user) return ncclSuccess;
  if (user->magic != NCCL_CONFIG_MAGIC)
    return fail(ncclInvalidArgument,
                "config is not initialised (magic 0x%x; start from NCCL_CONFIG_INITIALIZER)",
                user->magic);
  if (user->size < offsetof(ncclConfig_t, blocking) + sizeof(int) || user->size > (1u << 16))
    return fail(ncclInvalidArgument, "config size %zu is not a valid ncclConfig_t size",
                user->size);
  const auto* p = reinterpret_cast<const unsigned char*>(user);
  bytes.assign(p, p + user->size);  // a newer header's tail travels to the real NCCL as it is
  auto* c = reinterpret_cast<ncclConfig_t*>(bytes.data());
  if (c->blocking == 0) blocking = 0;
  if (has(bytes, &c->netName, c) && c->netName) netName = c->netName;
  if (has(bytes, &c->commName, c) && c->commName) commName = c->commName;
  present = true;
  return ncclSuccess;
}

ncclConfig_t* ConfigCopy::get() {
  if (!present) return nullptr;
  auto* c = reinterpret_cast<ncclConfig_t*>(bytes.data());
  if (has(bytes, &c->netName, c)) c->netName = netName.empty() ? nullptr : netName.c_str();
  if (has(bytes, &c->commName, c)) c->commName = commName.empty() ? nullptr : commName.c_str();
  return c;
}

// ---- handles ---------------------------------------------------------------------------------
ncclComm* usable(ncclComm_t comm, const char* fn, ncclResult_t* code) {
  if (!comm) {
    *code = fail(ncclInvalidArgument, "%s: comm is NULL", fn);
    return nullptr;
  }
  if (comm->magic != kCommMagic) {
    *code = fail(ncclInvalidArgument, "%s: not a live communicator (destroyed or aborted?)", fn);
    return nullptr;
  }
  if (!comm->ready.load(std::memory_order_acquire)) {
    *code = fail(ncclInvalidUsage, "%s: the communicator's initialisation failed or is not done",
                 fn);
    return nullptr;
  }
  if (comm->revoked.load()) {
    *code = fail(ncclInvalidUsage, "%s: the communicator was revoked", fn);
    return nullptr;
  }
  return comm;
}

// ---- creation --------------------------------------------------------------------------------
ncclResult_t initCoccl(ncclComm* c, const cocclUniqueId& id) {
  // The codec policy and its threshold are coccl's own (COCCL_POLICY, COCCL_CODEC*,
  // COCCL_COMPRESS_MIN_BYTES, read by coccl): the config leaves them unset. The name (which the
  // policy file's rules may match) is the ncclConfig_t's commName.
  cocclConfig_t cfg = COCCL_CONFIG_INITIALIZER;
  cfg.blocking = 1;
  cfg.commName = c->config.commName.empty() ? nullptr : c->config.commName.c_str();
  if (c->worldRank >= 0) cfg.worldRank = c->worldRank;
  // The shim forwards every uncompressed operation to its own real NCCL communicator, so
  // coccl's device path needs no second one for them (COCCL_DEVICE_EXACT, README): coccl's
  // kernels stay the fallback, unless the user set the variable (coccl says whether).
  char exact[32];
  int exactSet = 0;
  if (cocclGetEnvValue("COCCL_DEVICE_EXACT", exact, sizeof(exact), &exactSet) != cocclSuccess ||
      !exactSet)
    cfg.deviceExact = "coccl";
  c->cudaDev = currentDevice();
  ncclResult_t r = fromCoccl(cocclCommInitRankConfig(&c->coccl, c->nranks, id, c->rank, &cfg),
                             "ncclCommInitRank");
  if (r == ncclSuccess && cocclCommCuDevice(c->coccl, &c->cocclDev) != cocclSuccess)
    c->cocclDev = -1;
  return r;
}

ncclResult_t waitReal(const Real* r, ncclComm_t rc) {
  for (;;) {
    ncclResult_t st = ncclSuccess;
    ncclResult_t q = r->ncclCommGetAsyncError(rc, &st);
    if (q != ncclSuccess) return q;
    if (st != ncclInProgress) return st;
    sched_yield();
  }
}

namespace {

ncclResult_t initReal(ncclComm* c) {
  // Every rank must have the real NCCL, or none goes on (no rank is left waiting in NCCL).
  int32_t ok = real() ? 1 : 0, all = 0;
  ncclResult_t r = fromCoccl(cocclAllReduce(&ok, &all, 1, cocclInt32, cocclMin, c->coccl, nullptr),
                             "ncclCommInitRank");
  if (r != ncclSuccess) return r;
  if (!all)
    return fail(ncclSystemError, "ncclCommInitRank: %s",
                ok ? "the real NCCL could not be loaded on another rank" : loadError().c_str());
  const Real* rl = real();
  struct {
    int32_t status;
    ncclUniqueId id;
  } msg;
  std::memset(&msg, 0, sizeof(msg));
  if (c->rank == 0) msg.status = fromReal(rl->ncclGetUniqueId(&msg.id));
  r = fromCoccl(cocclBroadcast(&msg, &msg, sizeof(msg), cocclUint8, 0, c->coccl, nullptr),
                "ncclCommInitRank");
  if (r != ncclSuccess) return r;
  if (msg.status != ncclSuccess)
    return c->rank == 0 ? static_cast<ncclResult_t>(msg.status)
                        : fail(static_cast<ncclResult_t>(msg.status),
                               "ncclCommInitRank: ncclGetUniqueId of the real NCCL failed on rank 0");
  r = rl->ncclCommInitRankConfig(&c->real, c->nranks, msg.id, c->rank, c->config.get());
  if (r == ncclInProgress) r = waitReal(rl, c->real);
  if (r != ncclSuccess) return fromReal(r);
  int dev = -1;
  if (rl->ncclCommCuDevice && rl->ncclCommCuDevice(c->real, &dev) == ncclSuccess) c->cudaDev = dev;
  return ncclSuccess;
}

}  // namespace

ncclResult_t initComm(ncclComm* c, const cocclUniqueId& id) {
  ncclResult_t r = initCoccl(c, id);
  if (r == ncclSuccess && !env().noNccl) r = initReal(c);
  if (r != ncclSuccess) releaseComm(c);
  return r;
}

void releaseComm(ncclComm* c) {
  if (c->coccl) cocclCommAbort(c->coccl);
  c->coccl = nullptr;
  freeDeltaRefs(c);
  const Real* r = real();
  if (c->real && r && r->ncclCommAbort) r->ncclCommAbort(c->real);
  c->real = nullptr;
}

void finishInit(ncclComm* c, ncclResult_t r) {
  if (!c) return;
  c->asyncError.store(r, std::memory_order_release);
  if (r == ncclSuccess) c->ready.store(true, std::memory_order_release);
}

namespace {

ncclResult_t initRank(ncclComm_t* newcomm, int nranks, const ncclUniqueId& id, int rank,
                      ncclConfig_t* config, const char* fn) {
  if (!newcomm) return fail(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "%s: rank %d / nranks %d is invalid", fn, rank, nranks);
  auto c = std::make_unique<ncclComm>();
  c->rank = rank;
  c->nranks = nranks;
  c->asyncError = ncclInProgress;
  ncclResult_t r = c->config.set(config);
  if (r != ncclSuccess) return r;
  cocclUniqueId cid;
  std::memcpy(&cid, &id, sizeof(cid));
  ncclComm* raw = c.get();
  if (inGroup()) {  // at the outermost ncclGroupEnd, with the other inits of the group
    deferInit(raw, currentDevice(), [raw, cid] { return initComm(raw, cid); });
    *newcomm = c.release();
    return ncclSuccess;
  }
  r = initComm(raw, cid);
  if (r != ncclSuccess) return r;
  finishInit(raw, ncclSuccess);
  *newcomm = c.release();
  return ncclSuccess;
}

}  // namespace

}  // namespace shim

using namespace shim;

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  if (!uniqueId) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  static_assert(sizeof(cocclUniqueId) == sizeof(ncclUniqueId), "unique ids differ in size");
  return fromCoccl(cocclGetUniqueId(reinterpret_cast<cocclUniqueId*>(uniqueId)),
                   "ncclGetUniqueId");
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank) {
  return initRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

// Several ids spread the bootstrap load in NCCL; coccl's bootstrap takes one: the first.
NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
         int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || !commIds)
    return fail(ncclInvalidArgument, "ncclCommInitRankScalable: no unique id (nId %d)", nId);
  return initRank(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}

// One process, ndev ranks: each rank is created on its own thread on its device.
NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms || ndev < 1)
    return fail(ncclInvalidArgument, "ncclCommInitAll: comms is NULL or ndev %d < 1", ndev);
  cocclUniqueId id;
  ncclResult_t r = fromCoccl(cocclGetUniqueId(&id), "ncclCommInitAll");
  if (r != ncclSuccess) return r;
  std::vector<std::unique_ptr<ncclComm>> cs(ndev);
  std::vector<ncclResult_t> rs(ndev, ncclSuccess);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    cs[i] = std::make_unique<ncclComm>();
    cs[i]->rank = i;
    cs[i]->nranks = ndev;
    cs[i]->worldRank = i;  // one process, all its ranks: a launcher's RANK would be shared
    int dev = devlist ? devlist[i] : i;
    threads.emplace_back([&, i, dev] {
      rs[i] = setDevice(dev) ? initComm(cs[i].get(), id)
                             : fail(ncclUnhandledCudaError, "ncclCommInitAll: cannot use device %d", dev);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i)
    if (rs[i] != ncclSuccess) r = rs[i];
  for (int i = 0; i < ndev; ++i) {
    if (r != ncclSuccess) {
      releaseComm(cs[i].get());
      comms[i] = nullptr;
      continue;
    }
    finishInit(cs[i].get(), ncclSuccess);
    comms[i] = cs[i].release();
  }
  return r;
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  ncclResult_t code;
  ncclComm* c = usable(comm, "ncclCommFinalize", &code);
  if (!c) return code;
  ncclResult_t r1 = fromCoccl(cocclCommFinalize(c->coccl), "ncclCommFinalize");
  ncclResult_t r2 = ncclSuccess;
  const Real* rl = real();
  if (c->real && rl && rl->ncclCommFinalize) r2 = fromReal(rl->ncclCommFinalize(c->real));
  return r1 != ncclSuccess ? r1 : r2;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (comm->magic != kCommMagic)
    return fail(ncclInvalidArgument, "ncclCommDestroy: not a live communicator");
  ncclResult_t r1 = fromCoccl(cocclCommDestroy(comm->coccl), "ncclCommDestroy");
  freeDeltaRefs(comm);
  ncclResult_t r2 = ncclSuccess;
  const Real* rl = real();
  if (comm->real && rl) r2 = fromReal(rl->ncclCommDestroy(comm->real));
  comm->magic = 0;
  delete comm;
  return r1 != ncclSuccess ? r1 : r2;
}

// Stops both halves. The handle itself (a few hundred bytes) is kept, dead, until the process
// ends: another thread may still be inside a call on it (PyTorch's watchdog aborts while the
// main thread waits in a collective).
NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (comm->magic != kCommMagic)
    return fail(ncclInvalidArgument, "ncclCommAbort: not a live communicator");
  {
    static std::mutex m;
    static auto* graveyard = new std::vector<ncclComm*>();  // never freed: reachable
    std::lock_guard<std::mutex> lock(m);
    graveyard->push_back(comm);
  }
  comm->magic = 0;
  comm->asyncError.store(ncclRemoteError);
  cocclComm_t cc = comm->coccl;
  ncclComm_t rc = comm->real;
  comm->coccl = nullptr;
  comm->real = nullptr;
  ncclResult_t r1 = fromCoccl(cocclCommAbort(cc), "ncclCommAbort");
  freeDeltaRefs(comm);
  ncclResult_t r2 = ncclSuccess;
  const Real* rl = real();
  if (rc && rl) r2 = fromReal(rl->ncclCommAbort(rc));
  return r1 != ncclSuccess ? r1 : r2;
}

NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  ncclResult_t code;
  ncclComm* c = usable(comm, "ncclCommRevoke", &code);
  if (!c) return code;
  ncclResult_t r = ncclSuccess;
  if (c->real) {
    const Real* rl = real();
    if (!rl->ncclCommRevoke)
      return fail(ncclInvalidUsage, "ncclCommRevoke: the real NCCL %d lacks it", rl->version);
    r = fromReal(rl->ncclCommRevoke(c->real, revokeFlags));
  }
  if (r == ncclSuccess || r == ncclInProgress) c->revoked.store(true);
  return r;
}

// Cheap and thread-safe (PyTorch's watchdog polls it): atomics and the two halves' own cheap
// queries. An error of either half sticks.
NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  if (!comm || !asyncError || comm->magic != kCommMagic)
    return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm or asyncError is NULL or dead");
  int s = comm->asyncError.load(std::memory_order_acquire);
  if (s != ncclSuccess) {
    *asyncError = static_cast<ncclResult_t>(s);
    return ncclSuccess;
  }
  cocclResult_t ce = cocclSuccess;
  if (comm->coccl) cocclCommGetAsyncError(comm->coccl, &ce);
  ncclResult_t re = ncclSuccess;
  const Real* rl = comm->real ? real() : nullptr;
  if (rl) rl->ncclCommGetAsyncError(comm->real, &re);
  ncclResult_t err = ce != cocclSuccess && ce != cocclInProgress ? static_cast<ncclResult_t>(ce)
                     : re != ncclSuccess && re != ncclInProgress ? re
                                                                 : ncclSuccess;
  if (err != ncclSuccess) {
    int expected = ncclSuccess;
    comm->asyncError.compare_exchange_strong(expected, err);
    *asyncError = err;
  } else {
    *asyncError = re == ncclInProgress ? ncclInProgress : ncclSuccess;
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  if (!comm || !count || comm->magic != kCommMagic)
    return fail(ncclInvalidArgument, "ncclCommCount: comm or count is NULL or dead");
  *count = comm->nranks;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  if (!comm || !rank || comm->magic != kCommMagic)
    return fail(ncclInvalidArgument, "ncclCommUserRank: comm or rank is NULL or dead");
  *rank = comm->rank;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  if (!comm || !device || comm->magic != kCommMagic)
    return fail(ncclInvalidArgument, "ncclCommCuDevice: comm or device is NULL or dead");
  *device = comm->cudaDev;
  return ncclSuccess;
}
