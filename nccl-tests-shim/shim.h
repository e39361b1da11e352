// Internals of the libnccl.so.2 shim: the communicator that stands for an ncclComm_t, the table
// of the real NCCL's functions, errors and groups. Of coccl it uses include/coccl.h (which also
// says which calls coccl compresses: the shim keeps no policy of its own) and the NCCL loader
// with its one function table (src/transport/nccl/nccl_library.h); the real libnccl.so.2 is
// reached through dlopen/dlsym alone, never linked.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coccl.h"
#include "nccl_abi.h"
#include "transport/nccl/nccl_library.h"

// Defines pncclX (strong) and ncclX (a weak alias of it), both exported: NCCL's own scheme, which
// lets a profiler define ncclX and call pncclX.
#define SHIM_EXPORT extern "C" __attribute__((visibility("default")))
#define NCCL_API(ret, name, ...)                                                  \
  SHIM_EXPORT ret p##name(__VA_ARGS__);                                           \
  SHIM_EXPORT __attribute__((weak, alias("p" #name))) ret name(__VA_ARGS__);       \
  SHIM_EXPORT ret p##name(__VA_ARGS__)

namespace shim {

// ---- environment (read once) ---------------------------------------------------------------
// The shim reads only its own COCCL_SHIM_* variables; what coccl's variables say it asks coccl
// (cocclGetEnvValue; which calls coccl compresses: cocclCommQueryCodec, coll.cc).
struct Env {
  bool noNccl = false;          // COCCL_SHIM_NO_NCCL=1: no real NCCL at all
  int debug = 0;                // 0 silent (unset), 1 WARN, 2 INFO, 3 TRACE (coccl's COCCL_DEBUG)
};
const Env& env();
void logf(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// ---- errors ----------------------------------------------------------------------------------
// Records a message of the shim's own (ncclGetLastError returns it) and returns `code`.
ncclResult_t fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Maps a coccl result; on failure records "fn: <cocclGetLastError>".
ncclResult_t fromCoccl(cocclResult_t r, const char* fn);
// Notes a failure of the real NCCL (ncclGetLastError then asks it).
ncclResult_t fromReal(ncclResult_t r);

// ---- the real NCCL ---------------------------------------------------------------------------
// The library coccl's loader opened (handle, path, version) and its one table of functions
// (src/transport/nccl/nccl_functions.inc, shared with coccl's NCCL transport).
using Real = coccl::nccl::Library;
// The loaded real NCCL, or nullptr (COCCL_SHIM_NO_NCCL=1, or not found: loadError() says why).
const Real* real();
const std::string& loadError();
// Returns the real NCCL for `fn`, or nullptr after recording why (ncclSystemError when it could
// not be loaded, ncclInvalidUsage under COCCL_SHIM_NO_NCCL or when it lacks the function).
// *code receives that error.
const Real* needReal(const char* fn, ncclResult_t* code);

// ---- CUDA device of the calling thread (through the runtime or driver already in the process)
int currentDevice();            // -1 when there is no CUDA
bool setDevice(int dev);        // true when there is no CUDA in the process at all
bool isDeviceMemory(const void* p);  // known to the CUDA driver and not plain host memory

// ---- communicator ----------------------------------------------------------------------------
// A private copy of an ncclConfig_t of any version (its own `size` bytes), with its strings.
struct ConfigCopy {
  bool present = false;
  std::vector<unsigned char> bytes;
  std::string netName, commName;
  int blocking = 1;
  ncclResult_t set(const ncclConfig_t* user);  // ncclInvalidArgument if not initialised
  ncclConfig_t* get();                         // nullptr when absent
};

// The references of the weight-difference AllGather (delta.cc): one per (count, type, memory
// kind) of a communicator. A call holds its own share of the reference, so an abort from
// another thread (PyTorch's watchdog) only drops the communicator's.
struct DeltaMem;  // the buffer (nranks x count elements) and, on the device, its last-use event
struct DeltaRef {
  size_t count;
  ncclDataType_t type;
  bool device;
  std::shared_ptr<DeltaMem> mem;
};
struct DeltaRefs {
  std::mutex m;
  std::vector<DeltaRef> refs;
};

constexpr uint64_t kCommMagic = 0x636f63636c53484dull;  // "cocclSHM"

}  // namespace shim

struct ncclComm {
  uint64_t magic = shim::kCommMagic;
  cocclComm_t coccl = nullptr;
  ncclComm_t real = nullptr;
  int rank = -1, nranks = 0, cudaDev = -1;
  int cocclDev = -1;  // the coccl half's device; -1: it serves host buffers only
  // The world rank the coccl half is created with (cocclConfig_t.worldRank): a split or shrink
  // child's is its parent's (cocclCommWorldRanks); -1: coccl's default (the launcher's RANK...).
  int worldRank = -1;
  shim::ConfigCopy config;
  std::atomic<int> asyncError{ncclSuccess};  // sticky error; ncclInProgress until init is done
  std::atomic<bool> ready{false};
  std::atomic<bool> revoked{false};
  shim::DeltaRefs deltas;  // the weight-difference AllGather's references (delta.cc)
};

namespace shim {

// Validates a handle from the user. nullptr (after recording why) when unusable.
ncclComm* usable(ncclComm_t comm, const char* fn, ncclResult_t* code);

// Creates both halves of `c` (which already holds rank, nranks, config): the coccl communicator
// from `id`, then the real one, whose unique id rank 0 makes and broadcasts over coccl.
ncclResult_t initComm(ncclComm* c, const cocclUniqueId& id);
// Creates only the coccl half (split / shrink make the real half with the real NCCL's own call).
ncclResult_t initCoccl(ncclComm* c, const cocclUniqueId& id);
// Frees what init made after a failure (both halves), keeping the handle.
void releaseComm(ncclComm* c);
// Publishes the outcome of an init: ready on success, else a sticky asynchronous error.
void finishInit(ncclComm* c, ncclResult_t r);
// A non-blocking real communicator: polls until its pending work is done.
ncclResult_t waitReal(const Real* r, ncclComm_t rc);

// The real NCCL's `fn` for a forwarded call on `comm` (comm == nullptr when there is none to
// check, then *c is left alone): nullptr after recording why when the communicator is unusable,
// the real NCCL is unavailable, lacks the function, or the communicator has no real half.
template <class Fn>
const Real* forwardTo(Fn coccl::nccl::Functions::*fn, const char* name, ncclComm_t comm, ncclComm** c,
                      ncclResult_t* code) {
  if (c) {
    *c = usable(comm, name, code);
    if (!*c) return nullptr;
  }
  const Real* rl = needReal(name, code);
  if (!rl) return nullptr;
  if (!(rl->*fn)) {
    *code = fail(ncclInvalidUsage, "%s: the real NCCL %d (%s) does not have it", name,
                 rl->version, rl->path.c_str());
    return nullptr;
  }
  if (c && !(*c)->real) {
    *code = fail(ncclInvalidUsage, "%s: the communicator has no real NCCL half", name);
    return nullptr;
  }
  return rl;
}

// Bodies of forwarded functions: with a communicator `comm` (its real half is `c->real`), or
// with none.
#define SHIM_FORWARD(fn, ...)                                    \
  ncclComm* c;                                                   \
  ncclResult_t code;                                             \
  const Real* rl = forwardTo(&Real::fn, #fn, comm, &c, &code);   \
  if (!rl) return code;                                          \
  return fromReal(rl->fn(__VA_ARGS__));
#define SHIM_FORWARD_NOCOMM(fn, ...)                                 \
  ncclResult_t code;                                                 \
  const Real* rl = forwardTo(&Real::fn, #fn, nullptr, nullptr, &code); \
  if (!rl) return code;                                              \
  return fromReal(rl->fn(__VA_ARGS__));

// ---- groups ----------------------------------------------------------------------------------
bool inGroup();
// Inside a group: an init/split to run at the outermost ncclGroupEnd (on its own thread when
// there are several, after setting `device`); finishInit(c, result) follows (c may be nullptr).
void deferInit(ncclComm* c, int device, std::function<ncclResult_t()> run);

// ---- collectives -----------------------------------------------------------------------------
// Send and Recv: `send` / `recv` is the buffer, `peer` the other end (the collectives: -1).
enum class Coll { AllReduce, ReduceScatter, AllGather, Send, Recv };
struct CollOp {
  Coll kind;
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  ncclComm* comm;
  cudaStream_t stream;
  int peer = -1;
  bool delta = false;  // AllGather: the weight-difference AllGather (delta.cc)
};
ncclResult_t runCoccl(const CollOp& op);
ncclResult_t runReal(const CollOp& op);
void queueCoccl(const CollOp& op);  // inside a group

// The weight-difference AllGather (delta.cc): whether the policy asks it for this AllGather
// (cocclCommQueryAllGatherDelta); running it (cocclAllGatherDelta against the communicator's
// reference of this shape, then a copy of the reference to recvbuff: not inside a coccl group);
// dropping the references (destroy, abort, a failed init or call).
bool isDeltaAllGather(const CollOp& op);
ncclResult_t runDeltaAllGather(const CollOp& op);
void freeDeltaRefs(ncclComm* c);

}  // namespace shim
