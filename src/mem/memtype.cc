#include "mem/memtype.h"

#include <dlfcn.h>

#include <mutex>

namespace coccl {
namespace {

// The few driver API values used here (cuda.h, stable ABI).
using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr CUresult kCudaSuccess = 0;
constexpr int kAttrMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttrIsManaged = 8;   // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr unsigned kMemDevice = 2;  // CU_MEMORYTYPE_DEVICE
constexpr unsigned kMemUnified = 4; // CU_MEMORYTYPE_UNIFIED

using PointerGetAttributesFn = CUresult (*)(unsigned, int*, void**, CUdeviceptr);
using CtxGetCurrentFn = CUresult (*)(void**);
using ModuleGetLoadingModeFn = CUresult (*)(int*);
constexpr int kEagerLoading = 1;  // CU_MODULE_EAGER_LOADING

struct Driver {
  PointerGetAttributesFn pointerGetAttributes = nullptr;
  CtxGetCurrentFn ctxGetCurrent = nullptr;
  ModuleGetLoadingModeFn moduleGetLoadingMode = nullptr;
};

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    // RTLD_NOLOAD first: in a process using CUDA the runtime has loaded it already.
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    d.pointerGetAttributes =
        reinterpret_cast<PointerGetAttributesFn>(dlsym(h, "cuPointerGetAttributes"));
    d.ctxGetCurrent = reinterpret_cast<CtxGetCurrentFn>(dlsym(h, "cuCtxGetCurrent"));
    d.moduleGetLoadingMode =
        reinterpret_cast<ModuleGetLoadingModeFn>(dlsym(h, "cuModuleGetLoadingMode"));
  });
  return d;
}

}  // namespace

bool cudaDriverInitialised() {
  const Driver& d = driver();
  if (!d.ctxGetCurrent) return false;
  void* ctx = nullptr;
  return d.ctxGetCurrent(&ctx) == kCudaSuccess;  // CUDA_ERROR_NOT_INITIALIZED before cuInit
}

bool cudaLazyModuleLoading() {
  const Driver& d = driver();
  if (!d.moduleGetLoadingMode || !cudaDriverInitialised()) return false;
  int mode = kEagerLoading;
  return d.moduleGetLoadingMode(&mode) == kCudaSuccess && mode != kEagerLoading;
}

MemKind memKind(const void* p) {
  if (!p) return MemKind::Host;
  const Driver& d = driver();
  if (!d.pointerGetAttributes) return MemKind::Host;
  // The plural query reports plain host memory as success with null attributes (type 0), where
  // cuPointerGetAttribute fails with CUDA_ERROR_INVALID_VALUE (which compute-sanitizer counts
  // as an API error). It fails with CUDA_ERROR_NOT_INITIALIZED in a process without CUDA.
  int attrs[2] = {kAttrMemoryType, kAttrIsManaged};
  unsigned type = 0, managed = 0;
  void* data[2] = {&type, &managed};
  if (d.pointerGetAttributes(2, attrs, data, reinterpret_cast<CUdeviceptr>(p)) != kCudaSuccess)
    return MemKind::Host;
  if (type == kMemDevice || type == kMemUnified || managed) return MemKind::Device;
  return MemKind::Host;
}

}  // namespace coccl
