#include "transport/nccl/nccl_library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "core/env.h"
#include "core/log.h"

namespace coccl {
namespace nccl {
namespace {

// RTLD_DEEPBIND: the real NCCL's references to its own nccl* functions must bind inside it,
// not to a shim's, which come first in the global scope. Sanitizer runtimes refuse it (only
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

// The file holding this code: libcoccl.so, or the shim that links coccl statically.
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
// through its RPATH.
int collectTorch(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  const char* name = info->dlpi_name;
  if (name && std::strstr(name, "/libtorch_cuda.so"))
    out->push_back(dirOf(name) + "/../../nvidia/nccl/lib/libnccl.so.2");
  return 0;
}

std::vector<std::string> candidates(const std::string& own) {
  if (!env().ncclLibrary.empty()) return {env().ncclLibrary};
  std::vector<std::string> c;
  dl_iterate_phdr(collectTorch, &c);
  if (!own.empty()) c.push_back(dirOf(own) + "/libnccl.so.2.real");  // the original, renamed
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/libnccl.so.2",
                        "/usr/lib/aarch64-linux-gnu/libnccl.so.2", "/usr/lib64/libnccl.so.2",
                        "/usr/local/cuda/lib64/libnccl.so.2", "/usr/local/cuda/lib/libnccl.so.2",
                        "/usr/local/nccl/lib/libnccl.so.2", "/opt/nccl/lib/libnccl.so.2"})
    c.push_back(p);
  c.push_back("libnccl.so.2");  // the loader's own search (finds a preloaded shim: refused)
  return c;
}

// Opens `target` (a copy of the library) or returns nullptr with dlerror's text in *err.
void* openCopy(const std::string& target, std::string* err) {
  void* h = dlopen(target.c_str(), RTLD_NOW | RTLD_LOCAL | kDeepBind);
  if (!h) {
    const char* e = dlerror();
    *err = e ? e : "dlopen failed";
  }
  return h;
}

// Copies the file open as `in` (st_size bytes) into `out`. True when every byte was written.
bool copyFile(int in, int out, off_t size) {
  for (off_t off = 0; off < size;) {
    if (sendfile(out, in, &off, static_cast<size_t>(size - off)) <= 0) return false;
  }
  return true;
}

// Copies `path` to a new file and opens that copy (RTLD_LOCAL | RTLD_DEEPBIND). For a library
// the program has already loaded itself (PyTorch preloads its wheel's libnccl.so.2 by path)
// while a coccl shim is in the global scope: dlopen would hand back the program's instance,
// whose calls to its own exported nccl* functions were bound through the global scope, i.e. to
// the shim (which then sees the real NCCL's handles: every forwarded call failed with
// ncclInvalidArgument). A copy is a distinct object, bound inside itself; the program's
// instance stays unused. The copy goes to $TMPDIR (else /tmp) and is unlinked once mapped; if
// that fails (no space, a noexec mount), to a memfd, which stays open (its /proc/self/fd name
// must not be reused while the library is mapped).
void* openPrivateCopy(const std::string& path, std::string* why) {
  int in = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (in < 0 || fstat(in, &st) != 0) {
    if (in >= 0) close(in);
    *why = path + ": loaded by the program, and cannot be read for a private copy";
    return nullptr;
  }
  std::string err = "could not be written";
  void* h = nullptr;
  const char* tmp = getenv("TMPDIR");
  std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/coccl-real-nccl-XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  int out = mkostemp(buf.data(), O_CLOEXEC);
  if (out >= 0) {
    if (copyFile(in, out, st.st_size)) h = openCopy(buf.data(), &err);
    unlink(buf.data());
    close(out);
  }
  if (!h) {
#ifdef MFD_EXEC
    out = memfd_create("coccl-real-nccl", MFD_CLOEXEC | MFD_EXEC);
    if (out < 0) out = memfd_create("coccl-real-nccl", MFD_CLOEXEC);
#else
    out = memfd_create("coccl-real-nccl", MFD_CLOEXEC);
#endif
    if (out >= 0 && lseek(in, 0, SEEK_SET) == 0 && copyFile(in, out, st.st_size))
      h = openCopy("/proc/self/fd/" + std::to_string(out), &err);
    if (!h && out >= 0) close(out);  // else: kept open while mapped (see above)
  }
  close(in);
  if (!h) {
    *why = path + ": loaded by the program; its private copy did not load: " + err;
    return nullptr;
  }
  COCCL_INFO(kLogInit,
             "%s is loaded by the program and a shim is in the global scope: using a "
             "private copy",
             path.c_str());
  return h;
}

// True when a coccl shim's nccl* functions are in the process's global scope (LD_PRELOAD, or
// installed as libnccl.so.2): then a real NCCL loaded by the program binds to them.
bool shimInGlobalScope() {
  return dlsym(RTLD_DEFAULT, "ncclCocclShimVersion") != nullptr;
}

// Opens one candidate; nullptr (and why in *why) when it is absent, a shim, or not NCCL.
void* tryOpen(const std::string& cand, const std::string& own, std::string* why) {
  const bool byPath = cand.find('/') != std::string::npos;
  if (byPath) {
    std::string canon = canonical(cand);
    if (canon.empty()) {
      *why = cand + ": not found";
      return nullptr;
    }
    if (canon == own) {
      *why = cand + ": is the library that loads it (coccl or its shim)";
      return nullptr;
    }
  }
  // Already loaded by the program: a shim is refused before anything is copied; a real NCCL
  // is copied when a shim could have captured its internal calls, else shared as it is.
  void* pre = byPath ? dlopen(cand.c_str(), RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (pre && dlsym(pre, "ncclCocclShimVersion")) {
    dlclose(pre);
    *why = cand + ": is a coccl shim";
    return nullptr;
  }
  const bool copy = pre && shimInGlobalScope();
  if (pre) dlclose(pre);
  void* h = nullptr;
  if (copy) {
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
  if (dlsym(h, "ncclCocclShimVersion")) {  // a shim (this one or a copy)
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

Library g_lib;
bool g_loaded = false;
std::string g_why;
std::once_flag g_once;

void load() {
  if (env().shimNoNccl != 0) {  // the shim's switch holds for the process
    g_why = "the real NCCL is disabled (COCCL_SHIM_NO_NCCL=1)";
    return;
  }
  std::string own = ownPath(), tried;
  for (const std::string& cand : candidates(own)) {
    std::string why;
    void* h = tryOpen(cand, own, &why);
    if (!h) {
      tried += (tried.empty() ? "" : "; ") + why;
      continue;
    }
    g_lib.handle = h;
    g_lib.path = cand;
#define COCCL_NCCL_FN(name, ret, args) g_lib.name = reinterpret_cast<ret(*) args>(dlsym(h, #name));
#include "transport/nccl/nccl_functions.inc"
#undef COCCL_NCCL_FN
    if (g_lib.ncclGetVersion(&g_lib.version) != ncclSuccess) g_lib.version = 0;
    g_loaded = true;
    COCCL_INFO(kLogInit, "real NCCL %d loaded from %s", g_lib.version, cand.c_str());
    return;
  }
  g_why = "could not load the real libnccl.so.2 (set COCCL_NCCL_LIBRARY to its path): " + tried;
}

}  // namespace

const Library* library(std::string* why) {
  std::call_once(g_once, load);
  if (!g_loaded && why) *why = g_why;
  return g_loaded ? &g_lib : nullptr;
}

void* symbol(const char* name) {
  const Library* l = library();
  return l ? dlsym(l->handle, name) : nullptr;
}

}  // namespace nccl
}  // namespace coccl
