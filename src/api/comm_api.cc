// Communicator management at the C boundary.
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>

#include "api/api_internal.h"
#include "collectives/device_executors.h"
#include "core/bootstrap.h"
#include "core/dtype.h"
#include "core/env.h"
#include "mem/cuda_device.h"

using namespace coccl;

namespace {

// The launcher's world rank of this process: the first of RANK (torchrun, Megatron-LM's
// launchers), OMPI_COMM_WORLD_RANK (Open MPI), PMI_RANK (MPICH, Intel MPI), SLURM_PROCID (srun)
// that holds a non-negative integer, read once; -1 when none does. These are the launchers'
// variables, not coccl's, so they are not rows of the COCCL_* table.
int launcherWorldRank() {
  static const int rank = [] {
    for (const char* var : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
      const char* v = std::getenv(var);
      if (!v || !*v) continue;
      char* end = nullptr;
      errno = 0;
      const long x = std::strtol(v, &end, 10);
      if (errno == 0 && *end == '\0' && x >= 0 && x <= INT32_MAX) return static_cast<int>(x);
    }
    return -1;
  }();
  return rank;
}

// Applies the config (read as NCCL reads its own: `size` bytes over the defaults) and the
// environment to a CommConfig.
CommConfig makeConfig(const cocclConfig_t* user) {
  const Env& e = env();
  cocclConfig_t cfg = COCCL_CONFIG_INITIALIZER;
  if (user) {
    COCCL_CHECK_ARG(user->magic == COCCL_CONFIG_MAGIC,
                    "config is not initialised (magic 0x%x; start from COCCL_CONFIG_INITIALIZER)",
                    user->magic);
    COCCL_CHECK_ARG(user->size >= offsetof(cocclConfig_t, blocking),
                    "config size %zu is too small", user->size);
    size_t n = user->size < sizeof(cfg) ? user->size : sizeof(cfg);
    std::memcpy(&cfg, user, n);  // newer (larger) configs: the unknown tail is ignored
    cfg.size = sizeof(cfg);
  }
  CommConfig c;
  // Unset fields (the initializer's values) take the environment (already validated by its
  // rows); set ones must be what the variable's row accepts.
  std::string accepted, str;
  int64_t num = 0;
  auto checkInt = [&](const char* var, const char* field, int64_t v) {
    COCCL_CHECK_ARG(parseEnvValue(*findEnvRow(var), std::to_string(v), &str, &num, &accepted),
                    "%s %lld (config): expected %s (as %s)", field, static_cast<long long>(v),
                    accepted.c_str(), var);
    return v;
  };
  auto checkChoice = [&](const char* var, const char* field, const char* v) {
    COCCL_CHECK_ARG(parseEnvValue(*findEnvRow(var), v, &str, &num, &accepted),
                    "%s \"%s\" (config): expected %s (as %s)", field, v, accepted.c_str(), var);
    return str;
  };
  c.timeoutMs = cfg.timeoutMs != COCCL_CONFIG_UNDEF_INT
                    ? checkInt("COCCL_TIMEOUT_MS", "timeoutMs", cfg.timeoutMs)
                    : e.timeoutMs;
  c.chunkBytes = cfg.chunkBytes != -1 ? checkInt("COCCL_CHUNK_BYTES", "chunkBytes", cfg.chunkBytes)
                                      : e.chunkBytes;
  if (cfg.compressMinBytes != -1)
    checkInt("COCCL_COMPRESS_MIN_BYTES", "compressMinBytes", cfg.compressMinBytes);
  c.algo = cfg.algorithm ? checkChoice("COCCL_ALGO", "algorithm", cfg.algorithm) : e.algo;
  c.ringMinRanks = static_cast<int>(e.ringMinRanks);
  c.ranksPerNode = cfg.ranksPerNode != COCCL_CONFIG_UNDEF_INT
                       ? checkInt("COCCL_RANKS_PER_NODE", "ranksPerNode", cfg.ranksPerNode)
                       : e.ranksPerNode;
  c.deviceExact =
      cfg.deviceExact ? checkChoice("COCCL_DEVICE_EXACT", "deviceExact", cfg.deviceExact)
                      : e.deviceExact;
  c.deviceTransport = e.deviceTransport;
  c.deviceBlocks = e.deviceBlocks;
  c.deviceStagingBytes = e.deviceStagingBytes;
  c.ncclCallCheck = static_cast<int>(e.ncclCallCheck);
  c.stagedCallCheck = e.stagedCallCheck != 0;
  c.phaseTimes = e.phaseTimes != 0;
  c.deviceCodecRings = e.deviceCodecRings != 0;
  c.twoLevelPipeline = e.twoLevelPipeline != 0;
  if (cfg.commName) c.name = cfg.commName;
  if (cfg.worldRank != COCCL_CONFIG_UNDEF_INT) {
    COCCL_CHECK_ARG(cfg.worldRank >= 0, "worldRank %d (config) must be >= 0", cfg.worldRank);
    c.worldRank = cfg.worldRank;
  } else {
    c.worldRank = launcherWorldRank();
  }
  c.policy.file = cfg.policy ? std::string(cfg.policy) : e.policy;
  auto pick = [](const char* fromCfg, const std::string& fromEnv) {
    return fromCfg ? std::string(fromCfg) : fromEnv;
  };
  c.policy.codec = pick(cfg.codec, e.codec);
  c.policy.codecAllReduce = pick(cfg.codecAllReduce, e.codecAllReduce);
  c.policy.codecReduceScatter = pick(cfg.codecReduceScatter, e.codecReduceScatter);
  c.policy.codecAllGather = pick(cfg.codecAllGather, e.codecAllGather);
  c.policy.codecSendRecv = pick(cfg.codecSendRecv, e.codecSendRecv);
  c.policy.compressMinBytes = cfg.compressMinBytes >= 0 ? cfg.compressMinBytes : e.compressMinBytes;
  return c;
}

uint64_t hashString(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// The handle COCCL_COMM_ID describes (what cocclGetUniqueId returns while it is set).
BootstrapHandle commIdHandle(const std::string& commId) {
  BootstrapHandle bh;
  std::memset(&bh, 0, sizeof(bh));
  bh.magic = hashString(commId);
  bh.root = parseHostPort(commId);
  return bh;
}

bool allZero(const cocclUniqueId& id) {
  for (char c : id.internal)
    if (c) return false;
  return true;
}

void initRank(cocclComm* handle, int nranks, const cocclUniqueId& id, int rank,
              const CommConfig& cfg) {
  static std::once_flag versionOnce;  // COCCL_DEBUG=VERSION (or more): once per process
  std::call_once(versionOnce, [] {
    COCCL_VERSION_LOG("coccl version %d.%d.%d (CUDA device path %s)", COCCL_MAJOR, COCCL_MINOR,
                      COCCL_PATCH, deviceExecutorsBuilt() ? "built" : "not built");
  });
  BootstrapHandle bh;
  std::memcpy(&bh, id.internal, sizeof(bh));
  const std::string& commId = env().commId;
  // COCCL_COMM_ID (like NCCL_COMM_ID) applies to ids that carry its address (from
  // cocclGetUniqueId while it is set) and to all-zero ids (ranks that never exchanged one);
  // rank 0 then starts the root inside init. Any other id is used as it is, so programs with
  // several communicators keep working.
  if (!commId.empty()) {
    BootstrapHandle env = commIdHandle(commId);
    if (allZero(id) || (bh.magic == env.magic && bh.root.toString() == env.root.toString())) {
      bh = env;
      if (rank == 0) bootstrapCreateRootAt(bh.root, bh.magic);
    }
  }
  COCCL_CHECK_ARG(bh.magic != 0,
                  "unique id is not initialised (call cocclGetUniqueId on one rank and pass "
                  "its id to all)");
  setLogRank(rank);
  auto impl = std::make_unique<Communicator>(bh, rank, nranks, cfg);
  std::lock_guard<std::mutex> lock(handle->implMutex);
  handle->cudaDev = impl->cudaDevice();
  handle->impl = std::move(impl);
}

cocclResult_t commInit(cocclComm_t* comm, int nranks, cocclUniqueId id, int rank,
                       cocclConfig_t* config, const char* fn) {
  cocclComm* handle = nullptr;
  cocclResult_t r = guarded(nullptr, fn, [&] {
    COCCL_CHECK_ARG(comm != nullptr, "comm is NULL");
    *comm = nullptr;
    COCCL_CHECK_ARG(nranks >= 1, "nranks %d must be >= 1", nranks);
    COCCL_CHECK_ARG(rank >= 0 && rank < nranks, "rank %d is outside [0, %d)", rank, nranks);
    CommConfig cfg = makeConfig(config);
    cfg.cudaDevice = currentCudaDevice();  // this thread's device, as NCCL records it
    handle = new cocclComm();
    registerComm(handle);
    *comm = handle;
    if (inGroup()) {
      // Deferred: runs concurrently with the group's other inits at GroupEnd.
      QueuedOp op;
      op.run = [handle, nranks, id, rank, cfg] {
        CommUse use(handle);  // a destroy / abort meanwhile waits for the init to end
        initRank(handle, nranks, id, rank, cfg);
      };
      enqueue(std::move(op));
      return;
    }
    initRank(handle, nranks, id, rank, cfg);
  });
  if (r != cocclSuccess && handle && !inGroup()) {
    retireComm(handle);
    waitCommIdle(handle);
    delete handle;
    *comm = nullptr;
  }
  return r;
}

}  // namespace

extern "C" {

COCCL_API cocclResult_t cocclGetUniqueId(cocclUniqueId* uniqueId) {
  return guarded(nullptr, "cocclGetUniqueId", [&] {
    COCCL_CHECK_ARG(uniqueId != nullptr, "uniqueId is NULL");
    std::memset(uniqueId, 0, sizeof(*uniqueId));
    BootstrapHandle h;
    if (!env().commId.empty()) {
      h = commIdHandle(env().commId);  // rank 0 starts the root inside init
    } else {
      bootstrapCreateRoot(&h);
    }
    std::memcpy(uniqueId->internal, &h, sizeof(h));
  });
}

COCCL_API cocclResult_t cocclCommInitRank(cocclComm_t* comm, int nranks, cocclUniqueId commId,
                                          int rank) {
  return commInit(comm, nranks, commId, rank, nullptr, "cocclCommInitRank");
}

COCCL_API cocclResult_t cocclCommInitRankConfig(cocclComm_t* comm, int nranks,
                                                cocclUniqueId commId, int rank,
                                                cocclConfig_t* config) {
  return commInit(comm, nranks, commId, rank, config, "cocclCommInitRankConfig");
}

COCCL_API cocclResult_t cocclCommFinalize(cocclComm_t comm) {
  return guarded(comm, "cocclCommFinalize", [&] {
    Communicator& c = usableComm(comm);
    std::lock_guard<std::mutex> lock(comm->opMutex);
    c.finalize();
  });
}

COCCL_API cocclResult_t cocclCommDestroy(cocclComm_t comm) {
  if (!comm) return cocclSuccess;
  return guarded(nullptr, "cocclCommDestroy", [&] {
    COCCL_CHECK_ARG(retireComm(comm),
                    "comm %p is not a live communicator (destroyed or aborted already?)",
                    static_cast<const void*>(comm));
    waitCommIdle(comm);  // calls in flight on other threads (a watchdog's, a query's) return first
    {
      std::lock_guard<std::mutex> lock(comm->opMutex);
      comm->impl.reset();
    }
    delete comm;
  });
}

COCCL_API cocclResult_t cocclCommAbort(cocclComm_t comm) {
  if (!comm) return cocclSuccess;
  return guarded(nullptr, "cocclCommAbort", [&] {
    COCCL_CHECK_ARG(retireComm(comm),
                    "comm %p is not a live communicator (destroyed or aborted already?)",
                    static_cast<const void*>(comm));
    {
      std::lock_guard<std::mutex> lock(comm->implMutex);  // an init in a group may be setting it
      if (comm->impl) comm->impl->requestAbort();  // the call in flight (any thread) bails out
    }
    waitCommIdle(comm);
    {
      std::lock_guard<std::mutex> lock(comm->opMutex);
      comm->impl.reset();
    }
    delete comm;
  });
}

COCCL_API cocclResult_t cocclCommGetAsyncError(cocclComm_t comm, cocclResult_t* asyncError) {
  if (!comm || !asyncError)
    return reportError(nullptr, "cocclCommGetAsyncError", cocclInvalidArgument,
                       "comm or asyncError is NULL");
  // Counted in while it runs: a destroy / abort on another thread waits for it to return.
  if (!acquireComm(comm))
    return reportError(nullptr, "cocclCommGetAsyncError", cocclInvalidArgument,
                       "comm is not a live communicator (destroyed or aborted already?)");
  const CommRelease held{comm};
  Communicator* impl;
  {
    std::lock_guard<std::mutex> lock(comm->implMutex);  // an init in a group may be setting it
    impl = comm->impl.get();
  }
  if (!impl) {
    *asyncError = cocclInProgress;
    return cocclSuccess;
  }
  Communicator& c = *impl;
  cocclResult_t e = c.asyncError();
  if (e == cocclSuccess) {
    try {
      c.pollPeers();
    } catch (const Error& err) {  // a peer that died or aborted while this rank was idle
      reportError(comm, "cocclCommGetAsyncError", err.code(), err.what());
      e = c.asyncError() != cocclSuccess ? c.asyncError() : err.code();
    }
  }
  *asyncError = e;
  return cocclSuccess;
}

COCCL_API cocclResult_t cocclCommCount(const cocclComm_t comm, int* count) {
  return guarded(nullptr, "cocclCommCount", [&] {
    CommUse use(comm);
    COCCL_CHECK_ARG(comm && comm->impl && count, "comm or count is NULL");
    *count = comm->impl->nranks();
  });
}

COCCL_API cocclResult_t cocclCommUserRank(const cocclComm_t comm, int* rank) {
  return guarded(nullptr, "cocclCommUserRank", [&] {
    CommUse use(comm);
    COCCL_CHECK_ARG(comm && comm->impl && rank, "comm or rank is NULL");
    *rank = comm->impl->rank();
  });
}

COCCL_API cocclResult_t cocclCommCuDevice(const cocclComm_t comm, int* device) {
  return guarded(nullptr, "cocclCommCuDevice", [&] {
    CommUse use(comm);
    COCCL_CHECK_ARG(comm && comm->impl && device, "comm or device is NULL");
    *device = comm->cudaDev;
  });
}

COCCL_API cocclResult_t cocclCommGetLastCollStats(cocclComm_t comm, cocclCollStats_t* stats) {
  return guarded(nullptr, "cocclCommGetLastCollStats", [&] {
    CommUse use(comm);
    COCCL_CHECK_ARG(comm && comm->impl && stats, "comm or stats is NULL");
    const CollStats& s = comm->impl->stats();
    stats->logicalBytes = s.logicalBytes;
    stats->wireBytesSent = s.wireBytesSent;
    stats->codec = s.codec;
    stats->algorithm = s.algorithm;
  });
}

COCCL_API cocclResult_t cocclCodecCreate(const char* spec, cocclCodec_t* codec) {
  return guarded(nullptr, "cocclCodecCreate", [&] {
    COCCL_CHECK_ARG(spec && codec, "spec or codec is NULL");
    *codec = nullptr;
    auto h = std::make_unique<cocclCodec>();
    h->codec = makeCodec(spec);
    registerCodec(h.get());
    *codec = h.release();
  });
}

// A codec handle must outlive the operations that name it, as NCCL's handles do: a grouped
// *Codec call uses it at cocclGroupEnd. NULL is a no-op, as for cocclCommDestroy (cleanup after
// a failed cocclCodecCreate, which sets the handle to NULL).
COCCL_API cocclResult_t cocclCodecDestroy(cocclCodec_t codec) {
  if (!codec) return cocclSuccess;
  return guarded(nullptr, "cocclCodecDestroy", [&] {
    COCCL_CHECK_ARG(unregisterCodec(codec),
                    "codec %p is not a live codec handle (destroyed already, or never returned "
                    "by cocclCodecCreate)",
                    static_cast<const void*>(codec));
    delete codec;
  });
}

COCCL_API cocclResult_t cocclCodecEncodedBytes(cocclCodec_t codec, size_t count,
                                               cocclDataType_t datatype, size_t* bytes) {
  return guarded(nullptr, "cocclCodecEncodedBytes", [&] {
    checkLiveCodec(codec);
    COCCL_CHECK_ARG(bytes, "bytes is NULL");
    COCCL_CHECK_ARG(codec->codec->supportsType(datatype), "codec %s does not encode type %d",
                    codec->codec->name(), static_cast<int>(datatype));
    // No buffer holds more than kMaxBufferBytes; the codecs' size formulas stay far from
    // size_t's wrap below it.
    const size_t es = dtypeSize(datatype);
    COCCL_CHECK_ARG(count <= kMaxBufferBytes / es,
                    "count %zu of %zu-byte elements is more than any buffer holds (2^57 bytes)",
                    count, es);
    *bytes = codec->codec->encodedBytes(count, datatype);
  });
}

COCCL_API const char* cocclCodecName(cocclCodec_t codec) {
  try {
    checkLiveCodec(codec);
  } catch (const Error&) {
    return "";
  }
  return codec->codec->spec().c_str();
}

COCCL_API cocclResult_t cocclCodecBlockElems(cocclCodec_t codec, size_t* elems) {
  return guarded(nullptr, "cocclCodecBlockElems", [&] {
    checkLiveCodec(codec);
    COCCL_CHECK_ARG(elems, "elems is NULL");
    *elems = codec->codec->blockElems();
  });
}

COCCL_API cocclResult_t cocclCodecErrorBound(cocclCodec_t codec, double blockRms,
                                             double blockAbsMax, double* bound) {
  return guarded(nullptr, "cocclCodecErrorBound", [&] {
    checkLiveCodec(codec);
    COCCL_CHECK_ARG(bound, "bound is NULL");
    COCCL_CHECK_ARG(std::isfinite(blockRms) && std::isfinite(blockAbsMax) && blockRms >= 0 &&
                        blockAbsMax >= 0,
                    "block statistics must be finite and >= 0 (rms %g, absmax %g)", blockRms,
                    blockAbsMax);
    *bound = codec->codec->elementErrorBound(blockRms, blockAbsMax);
  });
}

}  // extern "C"
