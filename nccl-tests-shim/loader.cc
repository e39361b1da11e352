// The real NCCL: the library and its function table (nccl_functions.inc) that coccl's NCCL
// transport layer loads, shared with it (src/transport/nccl/nccl_library.h: by explicit path,
// RTLD_LOCAL | RTLD_DEEPBIND, never linked, never a shim, a private copy when the program loaded
// it itself), so that its nccl* symbols and the shim's cannot bind to each other. Also: the calling
// thread's CUDA device, through the CUDA runtime or driver the process already has (the shim
// links no CUDA library).
#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "shim.h"
#include "transport/nccl/nccl_library.h"

namespace shim {
namespace {

const Real* g_real = nullptr;
std::string g_loadError;
std::once_flag g_loadOnce;

void load() {
  if (env().noNccl) {
    g_loadError = "the real NCCL is disabled (COCCL_SHIM_NO_NCCL=1)";
    return;
  }
  std::string why;
  g_real = coccl::nccl::library(&why);  // its function table is filled by the loader
  if (!g_real) {
    g_loadError = why;
    logf(1, "%s", g_loadError.c_str());
    return;
  }
  logf(2, "loaded the real NCCL %d from %s", g_real->version, g_real->path.c_str());
}

}  // namespace

const Real* real() {
  std::call_once(g_loadOnce, load);
  return g_real;
}

const std::string& loadError() {
  real();
  return g_loadError;
}

const Real* needReal(const char* fn, ncclResult_t* code) {
  const Real* r = real();
  if (!r) {
    *code = env().noNccl ? ncclInvalidUsage : ncclSystemError;
    fail(*code, "%s is served by the real NCCL, which is not available: %s", fn,
         loadError().c_str());
  }
  return r;
}

// ---- CUDA device ---------------------------------------------------------------------------
namespace {

struct Cuda {
  int (*getDevice)(int*) = nullptr;  // cudaGetDevice / cudaSetDevice of the process's runtime
  int (*setDevice)(int) = nullptr;
  int (*cuInit)(unsigned) = nullptr;  // else the driver: the device's primary context
  int (*cuCtxGetDevice)(int*) = nullptr;
  int (*cuDevicePrimaryCtxRetain)(void**, int) = nullptr;
  int (*cuCtxSetCurrent)(void*) = nullptr;
};
Cuda g_cuda;
std::once_flag g_cudaOnce;

template <class F>
void sym(void* h, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(h, name));
}

void findCuda() {
  sym(RTLD_DEFAULT, "cudaGetDevice", &g_cuda.getDevice);
  sym(RTLD_DEFAULT, "cudaSetDevice", &g_cuda.setDevice);
  for (const char* lib : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
    if (g_cuda.getDevice && g_cuda.setDevice) return;
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD)) {  // only a runtime already loaded
      sym(h, "cudaGetDevice", &g_cuda.getDevice);
      sym(h, "cudaSetDevice", &g_cuda.setDevice);
    }
  }
  if (g_cuda.getDevice && g_cuda.setDevice) return;
  g_cuda.getDevice = nullptr;
  g_cuda.setDevice = nullptr;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  sym(h, "cuInit", &g_cuda.cuInit);
  sym(h, "cuCtxGetDevice", &g_cuda.cuCtxGetDevice);
  sym(h, "cuDevicePrimaryCtxRetain", &g_cuda.cuDevicePrimaryCtxRetain);
  sym(h, "cuCtxSetCurrent", &g_cuda.cuCtxSetCurrent);
  if (!g_cuda.cuInit || g_cuda.cuInit(0) != 0) g_cuda.cuInit = nullptr;
}

// cuPointerGetAttribute of the driver the process has loaded (none loaded: no device memory).
using PtrAttrFn = int (*)(void*, int, unsigned long long);
std::atomic<PtrAttrFn> g_ptrAttr{nullptr};

PtrAttrFn ptrAttr() {
  PtrAttrFn f = g_ptrAttr.load(std::memory_order_acquire);
  if (f) return f;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) return nullptr;
  f = reinterpret_cast<PtrAttrFn>(dlsym(h, "cuPointerGetAttribute"));
  g_ptrAttr.store(f, std::memory_order_release);
  return f;
}

}  // namespace

bool isDeviceMemory(const void* p) {
  if (!p) return false;
  PtrAttrFn f = ptrAttr();
  unsigned int type = 0;
  const int kMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE; 1 = CU_MEMORYTYPE_HOST
  if (!f || f(&type, kMemoryType, reinterpret_cast<uintptr_t>(p)) != 0) return false;
  return type != 1;
}

int currentDevice() {
  std::call_once(g_cudaOnce, findCuda);
  int dev = -1;
  if (g_cuda.getDevice) return g_cuda.getDevice(&dev) == 0 ? dev : -1;
  if (g_cuda.cuInit && g_cuda.cuCtxGetDevice) {
    if (g_cuda.cuCtxGetDevice(&dev) == 0) return dev;
    return 0;  // no current context: the runtime's default device
  }
  return -1;
}

// True when there is no CUDA in the process at all: host-only ranks have no device to set.
bool setDevice(int dev) {
  std::call_once(g_cudaOnce, findCuda);
  if (dev < 0) return true;
  if (g_cuda.setDevice) return g_cuda.setDevice(dev) == 0;
  if (g_cuda.cuInit && g_cuda.cuDevicePrimaryCtxRetain && g_cuda.cuCtxSetCurrent) {
    void* ctx = nullptr;
    return g_cuda.cuDevicePrimaryCtxRetain(&ctx, dev) == 0 && g_cuda.cuCtxSetCurrent(ctx) == 0;
  }
  return true;
}

}  // namespace shim
