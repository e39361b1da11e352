// The weight-difference AllGather behind ncclAllGather (SDP4Bit's qWD, arXiv 2410.15526, sec.
// 3.1): where the policy rule that compresses an AllGather says "delta": true
// (cocclCommQueryAllGatherDelta), the shim runs cocclAllGatherDelta against a reference it keeps
// for the communicator - the gathered result of the previous such call of that size and type,
// the same bytes on every rank - and then copies the reference to the caller's recvbuff. So
// ncclAllGather keeps its contract (recvbuff's old contents are never read: any buffer, in
// place or not) and each call's error is one quantization of the change since the previous
// call, not of the weights themselves.
//
// References: one per (count, datatype, memory kind) on a communicator, made at the first
// call of that shape (which is exact: COCCL_DELTA_RESET) in the memory of recvbuff's kind
// (device: cuMemAlloc of the driver the process has loaded, on the calling thread's current
// context; host: malloc), nranks x count elements, freed when the communicator is destroyed
// or aborted and no call still uses them. A call that fails drops every reference of the
// communicator on every rank (each gets the error), so the next call of each shape starts
// again with an exact one, alike on every rank. Every
// rank makes the same calls in the same order, so every rank makes, resets and updates the
// same references. On the device, a call on another stream than the previous call of its shape
// first waits for that call's copy (an event), so the reference is never updated under a copy
// still reading it.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "shim.h"

namespace shim {

namespace {

// The driver functions the references need (libcuda.so.1 the process already has loaded).
struct Driver {
  int (*memAlloc)(unsigned long long*, size_t) = nullptr;  // cuMemAlloc_v2
  int (*memFree)(unsigned long long) = nullptr;            // cuMemFree_v2
  int (*memcpyAsync)(unsigned long long, unsigned long long, size_t, void*) = nullptr;
  int (*eventCreate)(void**, unsigned) = nullptr;          // cuEventCreate
  int (*eventDestroy)(void*) = nullptr;                    // cuEventDestroy_v2
  int (*eventRecord)(void*, void*) = nullptr;              // cuEventRecord
  int (*streamWaitEvent)(void*, void*, unsigned) = nullptr;  // cuStreamWaitEvent
};

const Driver* driver() {
  static Driver d;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) return;
    auto sym = [h](const char* name, auto* fn) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(h, name));
      return *fn != nullptr;
    };
    ok = sym("cuMemAlloc_v2", &d.memAlloc) && sym("cuMemFree_v2", &d.memFree) &&
         sym("cuMemcpyAsync", &d.memcpyAsync) && sym("cuEventCreate", &d.eventCreate) &&
         sym("cuEventDestroy_v2", &d.eventDestroy) && sym("cuEventRecord", &d.eventRecord) &&
         sym("cuStreamWaitEvent", &d.streamWaitEvent);
  });
  return ok ? &d : nullptr;
}

size_t elemSize(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclFloat32: return 4;
    default: return 0;  // the codecs encode only these three (cocclCommQueryAllGatherDelta)
  }
}

}  // namespace

struct DeltaMem {
  bool device = false;
  void* buf = nullptr;
  void* event = nullptr;          // device: recorded after each call's copy
  cudaStream_t stream = nullptr;  // device: the stream of the last call
  ~DeltaMem() {
    if (!device) {
      std::free(buf);
    } else if (const Driver* d = driver()) {
      if (event) d->eventDestroy(event);
      if (buf) d->memFree(reinterpret_cast<uintptr_t>(buf));  // waits for work that uses it
    }
  }
};

bool isDeltaAllGather(const CollOp& o) {
  if (o.kind != Coll::AllGather || !o.comm->coccl) return false;
  int delta = 0;
  return cocclCommQueryAllGatherDelta(o.comm->coccl, o.count,
                                      static_cast<cocclDataType_t>(o.type), &delta) ==
             cocclSuccess &&
         delta == 1;
}

ncclResult_t runDeltaAllGather(const CollOp& o) {
  ncclComm* c = o.comm;
  const size_t es = elemSize(o.type);
  if (!es) return fail(ncclInternalError, "ncclAllGather: delta for data type %d", o.type);
  // recvbuff is read only by the copy below (coccl checks the shim's reference instead)
  if (o.count != 0 && o.recv == nullptr)
    return fail(ncclInvalidArgument, "ncclAllGather: recvbuff is NULL with a non-zero count");
  if (o.count > SIZE_MAX / es / static_cast<size_t>(c->nranks))
    return fail(ncclInvalidArgument, "ncclAllGather: count %zu overflows (%d ranks x %zu bytes)",
                o.count, c->nranks, es);
  const size_t bytes = o.count * es * static_cast<size_t>(c->nranks);
  const bool device = isDeviceMemory(o.recv);
  const Driver* drv = device ? driver() : nullptr;
  if (device && !drv)
    return fail(ncclSystemError, "ncclAllGather (delta): the CUDA driver's memory, copy or "
                                 "event functions are not in the process");
  std::shared_ptr<DeltaMem> mem;
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(c->deltas.m);
    for (const DeltaRef& r : c->deltas.refs)
      if (r.count == o.count && r.type == o.type && r.device == device) mem = r.mem;
    if (!mem) {
      auto m = std::make_shared<DeltaMem>();
      m->device = device;
      if (device) {
        unsigned long long p = 0;
        if (drv->memAlloc(&p, bytes) != 0)
          return fail(ncclSystemError,
                      "ncclAllGather (delta): cannot allocate the reference of %zu bytes on the "
                      "device", bytes);
        m->buf = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
        const unsigned kDisableTiming = 0x2;  // CU_EVENT_DISABLE_TIMING
        if (drv->eventCreate(&m->event, kDisableTiming) != 0)
          return fail(ncclSystemError, "ncclAllGather (delta): cuEventCreate failed");
      } else if (!(m->buf = std::malloc(bytes))) {
        return fail(ncclSystemError,
                    "ncclAllGather (delta): cannot allocate the reference of %zu bytes", bytes);
      }
      c->deltas.refs.push_back(DeltaRef{o.count, o.type, device, m});
      mem = m;
      fresh = true;
      logf(2, "ncclAllGather (delta): a reference of %zu elements of type %d (%zu bytes, %s) "
              "for rank %d of %d", o.count * static_cast<size_t>(c->nranks), o.type, bytes,
           device ? "device" : "host", c->rank, c->nranks);
    }
  }
  // The previous call's copy from the reference (every reference in the list has had one) was
  // on another stream: wait for it.
  if (device && !fresh && mem->stream != o.stream &&
      drv->streamWaitEvent(o.stream, mem->event, 0) != 0) {
    freeDeltaRefs(c);
    return fail(ncclUnhandledCudaError, "ncclAllGather (delta): cuStreamWaitEvent failed");
  }
  ncclResult_t r = fromCoccl(
      cocclAllGatherDelta(o.send, mem->buf, o.count, static_cast<cocclDataType_t>(o.type),
                          nullptr, fresh ? COCCL_DELTA_RESET : 0u, c->coccl, o.stream),
      "ncclAllGather");
  if (r == ncclSuccess && device &&
      (drv->memcpyAsync(reinterpret_cast<uintptr_t>(o.recv), reinterpret_cast<uintptr_t>(mem->buf),
                        bytes, o.stream) != 0 ||
       drv->eventRecord(mem->event, o.stream) != 0))
    r = fail(ncclUnhandledCudaError, "ncclAllGather (delta): the copy of %zu bytes from the "
                                     "reference failed", bytes);
  if (r != ncclSuccess) {
    freeDeltaRefs(c);
    return r;
  }
  if (!device) std::memcpy(o.recv, mem->buf, bytes);  // host calls are complete on return
  mem->stream = o.stream;
  return ncclSuccess;
}

// Drops every reference of the communicator (destroy, abort, a failed call); calls holding one
// keep it until they return. After a failed call the ranks' sets may differ (ranks that passed
// different shapes hold different ones), and every rank got an error: dropping all of them on
// every rank makes the next call of each shape exact, and alike, everywhere.
void freeDeltaRefs(ncclComm* c) {
  std::vector<DeltaRef> refs;  // destroyed after the lock is released
  std::lock_guard<std::mutex> lock(c->deltas.m);
  refs.swap(c->deltas.refs);
}

}  // namespace shim
