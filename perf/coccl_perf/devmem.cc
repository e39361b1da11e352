// Device memory of coccl_perf (see devmem.h).
#include "devmem.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "runtime.h"

#if defined(COCCL_PERF_CUDA)
#include <cuda_runtime.h>
#endif

namespace cocclperf {

#if defined(COCCL_PERF_CUDA)

namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  throw PerfError(std::string(what) + " failed: " + cudaGetErrorString(e));
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return end != v && !*end && x >= 0 ? static_cast<int>(x) : -1;
}

// ncclMemAlloc and ncclMemFree of the libnccl.so.2 the loader finds (ncclResult_t is an int;
// ncclSuccess is 0).
struct NcclMem {
  int (*alloc)(void**, size_t) = nullptr;
  int (*free)(void*) = nullptr;
};

const NcclMem& ncclMem() {
  static const NcclMem m = [] {
    NcclMem r;
    void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h)
      throw PerfError(std::string("--alloc ncclMemAlloc: cannot open libnccl.so.2: ") + dlerror());
    r.alloc = reinterpret_cast<int (*)(void**, size_t)>(dlsym(h, "ncclMemAlloc"));
    r.free = reinterpret_cast<int (*)(void*)>(dlsym(h, "ncclMemFree"));
    if (!r.alloc || !r.free)
      throw PerfError(
          "--alloc ncclMemAlloc: libnccl.so.2 has no ncclMemAlloc/ncclMemFree (NCCL < 2.19?)");
    return r;
  }();
  return m;
}

}  // namespace

bool deviceSupport() { return true; }

int selectDevice(int proc, int thread, int nThreads) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  // Without a GPU (or its driver) the runtime says "insufficient driver" or "no device": say
  // what it means here first.
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
    throw PerfError(std::string("--mem device: no usable CUDA device on this machine (") +
                    cudaGetErrorString(e) + "); use --mem host");
  check(e, "cudaGetDeviceCount");
  if (n < 1) throw PerfError("--mem device: no CUDA device visible; use --mem host");
  int local = -1;
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "MPI_LOCALRANKID",
                        "SLURM_LOCALID"})
    if ((local = envInt(v)) >= 0) break;
  if (local < 0) local = proc;
  const int dev = (local * nThreads + thread) % n;
  check(cudaSetDevice(dev), "cudaSetDevice");
  check(cudaFree(nullptr), "CUDA context creation");
  return dev;
}

DeviceRank::DeviceRank(size_t bytes, const std::string& alloc) {
  if (alloc == "ncclMemAlloc") {
    const NcclMem& m = ncclMem();
    ncclFree_ = m.free;
    if (m.alloc(&send_, bytes ? bytes : 1) != 0 || m.alloc(&recv_, bytes ? bytes : 1) != 0) {
      for (void* p : {send_, recv_})
        if (p) m.free(p);
      throw PerfError("ncclMemAlloc of " + std::to_string(bytes) + " bytes failed");
    }
  } else {
    check(cudaMalloc(&send_, bytes ? bytes : 1), "cudaMalloc (send buffer)");
    check(cudaMalloc(&recv_, bytes ? bytes : 1), "cudaMalloc (recv buffer)");
  }
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  ev0_ = e0;
  ev1_ = e1;
}

DeviceRank::~DeviceRank() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (ev0_) cudaEventDestroy(static_cast<cudaEvent_t>(ev0_));
  if (ev1_) cudaEventDestroy(static_cast<cudaEvent_t>(ev1_));
  if (stream_) cudaStreamDestroy(stream_);
  for (void* p : {send_, recv_})
    if (p) ncclFree_ ? static_cast<void>(ncclFree_(p)) : static_cast<void>(cudaFree(p));
}

// On the rank's own (non-blocking) stream, then waited for: a plain cudaMemcpy from pageable
// memory may return before its DMA has landed, and work on a non-blocking stream is not
// ordered after the legacy stream's copy, so a collective issued next could read stale input
// (seen as in-place #wrong on the staged device pipeline, whose first kernel reads at once).
void DeviceRank::upload(void* dev, const void* host, size_t bytes) {
  if (!bytes) return;
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  check(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync (to device)");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void DeviceRank::download(void* host, const void* dev, size_t bytes) {
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  if (!bytes) return;
  check(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync (to host)");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void DeviceRank::sync() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

void DeviceRank::startTimer() {
  check(cudaEventRecord(static_cast<cudaEvent_t>(ev0_), stream_), "cudaEventRecord");
}

double DeviceRank::stopTimerSeconds() {
  check(cudaEventRecord(static_cast<cudaEvent_t>(ev1_), stream_), "cudaEventRecord");
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(ev1_)), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(ev0_), static_cast<cudaEvent_t>(ev1_)),
        "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1e-3;
}

#else  // host-only build

namespace {
[[noreturn]] void noCuda() { throw PerfError("--mem device needs a CUDA build of coccl_perf"); }
}  // namespace

bool deviceSupport() { return false; }
int selectDevice(int, int, int) { noCuda(); }
DeviceRank::DeviceRank(size_t, const std::string&) {
  noCuda();
}
DeviceRank::~DeviceRank() = default;
void DeviceRank::upload(void*, const void*, size_t) { noCuda(); }
void DeviceRank::download(void*, const void*, size_t) { noCuda(); }
void DeviceRank::sync() { noCuda(); }
void DeviceRank::startTimer() { noCuda(); }
double DeviceRank::stopTimerSeconds() { noCuda(); }

#endif

}  // namespace cocclperf
