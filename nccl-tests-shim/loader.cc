// Loads the real libnccl.so.2 by explicit path (RTLD_LOCAL | RTLD_DEEPBIND, never linked), so
// that its nccl* symbols and the shim's cannot bind to each other, and fetches its functions
// into a table once. Also: the calling thread's CUDA device, through the CUDA runtime or driver
// the process already has (the shim links no CUDA library).
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "shim.h"

namespace shim {
namespace {

Real g_real;
bool g_loaded = false;
std::string g_loadError;
std::once_flag g_loadOnce;

// RTLD_DEEPBIND: the real NCCL's references to its own nccl* functions must bind inside it,
// not to the shim's, which come first in the global scope. Sanitizer runtimes refuse it (only
// test builds are sanitized).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kDeepBind = 0;
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif

std::string canonical(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

std::string ownPath() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&ownPath), &info) && info.dli_fname)
    return canonical(info.dli_fname);
  return std::string();
}

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// PyTorch wheels keep NCCL in site-packages/nvidia/nccl/lib, which libtorch_cuda.so finds
// through its RPATH; with the shim preloaded that copy is never loaded, so look for it there.
int collectTorch(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  const char* name = info->dlpi_name;
  if (name && std::strstr(name, "/libtorch_cuda.so"))
    out->push_back(dirOf(name) + "/../../nvidia/nccl/lib/libnccl.so.2");
  return 0;
}

std::vector<std::string> candidates() {
  if (!env().ncclLibrary.empty()) return {env().ncclLibrary};
  std::vector<std::string> c;
  dl_iterate_phdr(collectTorch, &c);
  std::string own = ownPath();
  if (!own.empty()) c.push_back(dirOf(own) + "/libnccl.so.2.real");  // the original, renamed
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/libnccl.so.2", "/usr/lib/aarch64-linux-gnu/libnccl.so.2",
                        "/usr/lib64/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
                        "/usr/local/cuda/lib/libnccl.so.2", "/usr/local/nccl/lib/libnccl.so.2",
                        "/opt/nccl/lib/libnccl.so.2"})
    c.push_back(p);
  c.push_back("libnccl.so.2");  // the loader's own search (finds the shim itself when it is it)
  return c;
}

// Copies `path` to a new file and opens that copy (RTLD_LOCAL | RTLD_DEEPBIND). For a library
// the program has already loaded itself (PyTorch preloads its wheel's libnccl.so.2 by path):
// dlopen would hand back that instance, whose calls to its own exported nccl* functions were
// bound through the global scope, i.e. to the shim (which then sees the real NCCL's handles:
// every forwarded call failed with ncclInvalidArgument). A copy is a distinct object, bound
// inside itself; the program's instance stays unused. The copy lives in $TMPDIR (else /tmp), is
// unlinked once mapped, or in a memfd when no directory is writable.
void* openPrivateCopy(const std::string& path, std::string* why) {
  int in = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (in < 0 || fstat(in, &st) != 0) {
    if (in >= 0) close(in);
    *why = path + ": loaded by the program, and cannot be read for a private copy";
    return nullptr;
  }
  const char* tmp = getenv("TMPDIR");
  std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/coccl-real-nccl-XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  int out = mkstemp(buf.data());
  std::string target = buf.data();
  if (out < 0) {
    out = memfd_create("coccl-real-nccl", MFD_CLOEXEC);
    target = "/proc/self/fd/" + std::to_string(out);
  }
  bool copied = out >= 0;
  for (off_t off = 0; copied && off < st.st_size;) {
    ssize_t n = sendfile(out, in, &off, static_cast<size_t>(st.st_size - off));
    if (n <= 0) copied = false;
  }
  close(in);
  void* h = copied ? dlopen(target.c_str(), RTLD_NOW | RTLD_LOCAL | kDeepBind) : nullptr;
  const char* e = h || !copied ? nullptr : dlerror();
  if (target.compare(0, 6, "/proc/") != 0 && out >= 0) unlink(target.c_str());
  if (out >= 0) close(out);
  if (!h) {
    *why = path + ": loaded by the program; its private copy " +
           (copied ? "did not load: " + std::string(e ? e : "?") : "could not be written");
    return nullptr;
  }
  logf(2, "%s is loaded by the program (its nccl* calls bind to the shim): using a private copy",
       path.c_str());
  return h;
}

// Opens one candidate; nullptr (and why in *why) when it is absent, the shim, or not NCCL.
void* tryOpen(const std::string& cand, const std::string& own, std::string* why) {
  if (cand.find('/') != std::string::npos) {
    std::string canon = canonical(cand);
    if (canon.empty()) {
      *why = cand + ": not found";
      return nullptr;
    }
    if (canon == own) {
      *why = cand + ": is this shim";
      return nullptr;
    }
  }
  void* h = nullptr;
  void* pre = cand.find('/') != std::string::npos ? dlopen(cand.c_str(), RTLD_NOW | RTLD_NOLOAD)
                                                  : nullptr;
  if (pre) {
    dlclose(pre);
    h = openPrivateCopy(cand, why);
    if (!h) return nullptr;
  } else {
    h = dlopen(cand.c_str(), RTLD_NOW | RTLD_LOCAL | kDeepBind);
  }
  if (!h) {
    const char* e = dlerror();
    *why = cand + ": " + (e ? e : "dlopen failed");
    return nullptr;
  }
  if (dlsym(h, "ncclCocclShimVersion")) {  // the shim itself or another copy of it
    dlclose(h);
    *why = cand + ": is a coccl shim";
    return nullptr;
  }
  if (!dlsym(h, "ncclGetVersion") || !dlsym(h, "ncclCommInitRankConfig")) {
    dlclose(h);
    *why = cand + ": not an NCCL library";
    return nullptr;
  }
  return h;
}

void load() {
  if (env().noNccl) {
    g_loadError = "the real NCCL is disabled (COCCL_SHIM_NO_NCCL=1)";
    return;
  }
  std::string own = ownPath(), tried;
  for (const std::string& cand : candidates()) {
    std::string why;
    void* h = tryOpen(cand, own, &why);
    if (!h) {
      tried += (tried.empty() ? "" : "; ") + why;
      continue;
    }
    g_real.handle = h;
    g_real.path = cand;
#define SHIM_REAL_FN(name, ret, args) \
  g_real.name = reinterpret_cast<ret(*) args>(dlsym(h, #name));
#include "real_functions.inc"
#undef SHIM_REAL_FN
    if (g_real.ncclGetVersion(&g_real.version) != ncclSuccess) g_real.version = 0;
    g_loaded = true;
    logf(2, "loaded the real NCCL %d from %s", g_real.version, cand.c_str());
    return;
  }
  g_loadError = "could not load the real libnccl.so.2 (set COCCL_NCCL_LIBRARY to its path): " +
                tried;
  logf(1, "%s", g_loadError.c_str());
}

}  // namespace

const Real* real() {
  std::call_once(g_loadOnce, load);
  return g_loaded ? &g_real : nullptr;
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
