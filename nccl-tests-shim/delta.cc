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
// or aborted. Every rank makes the same calls in the same order, so every rank makes, resets
// and updates the same references. A program that gathers several different tensors of one
// shape through one communicator shares one reference among them: each call is then a
// compressed gather of the difference between those tensors (still within the codec's bound
// of that difference, but with little gain).
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>

#include "shim.h"

namespace shim {

namespace {

// The driver functions the references need (libcuda.so.1 the process already has loaded).
struct Driver {
  int (*memAlloc)(unsigned long long*, size_t) = nullptr;  // cuMemAlloc_v2
  int (*memFree)(unsigned long long) = nullptr;            // cuMemFree_v2
  int (*memcpyAsync)(unsigned long long, unsigned long long, size_t, void*) = nullptr;
};

const Driver* driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) return;
    d.memAlloc = reinterpret_cast<decltype(d.memAlloc)>(dlsym(h, "cuMemAlloc_v2"));
    d.memFree = reinterpret_cast<decltype(d.memFree)>(dlsym(h, "cuMemFree_v2"));
    d.memcpyAsync = reinterpret_cast<decltype(d.memcpyAsync)>(dlsym(h, "cuMemcpyAsync"));
  });
  return d.memAlloc && d.memFree && d.memcpyAsync ? &d : nullptr;
}

size_t elemSize(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclFloat32: return 4;
    default: return 0;  // the codecs encode only these three (cocclCommQueryAllGatherDelta)
  }
}

// Frees a reference's memory (cuMemFree waits for work that still uses it).
void release(const DeltaRef& r) {
  if (!r.device) {
    std::free(r.buf);
  } else if (const Driver* d = driver()) {
    d->memFree(reinterpret_cast<uintptr_t>(r.buf));
  }
}

void freeRef(ncclComm* c, const DeltaRef* ref) {
  std::lock_guard<std::mutex> lock(c->deltas.m);
  for (auto it = c->deltas.refs.begin(); it != c->deltas.refs.end(); ++it)
    if (&*it == ref) {
      release(*it);
      c->deltas.refs.erase(it);
      return;
    }
}

}  // namespace

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
  const size_t bytes = o.count * es * static_cast<size_t>(c->nranks);
  const bool device = isDeviceMemory(o.recv);
  const Driver* drv = device ? driver() : nullptr;
  if (device && !drv)
    return fail(ncclSystemError, "ncclAllGather (delta): the CUDA driver's cuMemAlloc_v2, "
                                 "cuMemFree_v2 or cuMemcpyAsync is not in the process");
  DeltaRef* ref = nullptr;
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(c->deltas.m);
    for (DeltaRef& r : c->deltas.refs)
      if (r.count == o.count && r.type == o.type && r.device == device) ref = &r;
    if (!ref) {
      void* buf = nullptr;
      if (device) {
        unsigned long long p = 0;
        if (drv->memAlloc(&p, bytes) != 0)
          return fail(ncclSystemError,
                      "ncclAllGather (delta): cannot allocate the reference of %zu bytes on the "
                      "device", bytes);
        buf = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
      } else if (!(buf = std::malloc(bytes))) {
        return fail(ncclSystemError,
                    "ncclAllGather (delta): cannot allocate the reference of %zu bytes", bytes);
      }
      c->deltas.refs.push_back(DeltaRef{o.count, o.type, device, buf});
      ref = &c->deltas.refs.back();
      fresh = true;
      logf(2, "ncclAllGather (delta): a reference of %zu elements of type %d (%zu bytes, %s) "
              "for rank %d of %d", o.count * static_cast<size_t>(c->nranks), o.type, bytes,
           device ? "device" : "host", c->rank, c->nranks);
    }
  }
  ncclResult_t r = fromCoccl(
      cocclAllGatherDelta(o.send, ref->buf, o.count, static_cast<cocclDataType_t>(o.type),
                          nullptr, fresh ? COCCL_DELTA_RESET : 0u, c->coccl, o.stream),
      "ncclAllGather");
  if (r != ncclSuccess) {
    // A failed first call leaves the reference unset: the next call makes and resets it anew.
    if (fresh) freeRef(c, ref);
    return r;
  }
  if (device) {
    if (drv->memcpyAsync(reinterpret_cast<uintptr_t>(o.recv), reinterpret_cast<uintptr_t>(ref->buf),
                         bytes, o.stream) != 0)
      return fail(ncclUnhandledCudaError, "ncclAllGather (delta): cuMemcpyAsync of %zu bytes "
                                          "from the reference failed", bytes);
  } else {
    std::memcpy(o.recv, ref->buf, bytes);  // host calls are complete when coccl returns
  }
  return ncclSuccess;
}

void freeDeltaRefs(ncclComm* c) {
  std::list<DeltaRef> refs;
  {
    std::lock_guard<std::mutex> lock(c->deltas.m);
    refs.swap(c->deltas.refs);
  }
  for (const DeltaRef& r : refs) release(r);
}

}  // namespace shim
