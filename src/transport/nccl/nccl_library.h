// The real libnccl.so.2, loaded at run time by explicit path (dlopen with RTLD_LOCAL |
// RTLD_DEEPBIND), never linked: the NCCL transport and the libnccl.so.2 shim call it through
// dlsym'd pointers, so that a shim's exported nccl* symbols and NCCL's cannot bind to each other.
// Loaded once per process and shared by everything in it (the transport inside the shim uses
// the shim's copy).
//
// Search (first that loads): COCCL_NCCL_LIBRARY alone when set; else the NCCL of a loaded
// PyTorch (<dir of libtorch_cuda.so>/../../nvidia/nccl/lib/libnccl.so.2), libnccl.so.2.real
// beside the library holding this code (a shim installed in place of NCCL), the system's
// lib directories, then the dynamic loader's own search. A library that exports
// ncclCocclShimVersion (a coccl shim) is never taken. A candidate that the program has already
// loaded itself is shared, unless a shim is in the global scope: then it is opened as a private
// copy (see nccl_library.cc).
#pragma once

#include <string>

#include "transport/nccl/nccl_abi.h"

namespace coccl {
namespace nccl {

// The real NCCL's functions (nccl_functions.inc), each nullptr where the library lacks it.
struct Functions {
#define COCCL_NCCL_FN(name, ret, args) ret(*name) args = nullptr;
#include "transport/nccl/nccl_functions.inc"
#undef COCCL_NCCL_FN
};

// The loaded library and its function table, filled once by the loader.
struct Library : Functions {
  void* handle = nullptr;  // for dlsym
  std::string path;        // the candidate it came from
  int version = 0;         // ncclGetVersion (e.g. 22809)
};

// The process's real NCCL, or nullptr when none loads; then *why (if not null) lists what was
// tried. Thread-safe, never throws; the first call decides.
const Library* library(std::string* why = nullptr);

// Looks up `name` in the loaded library (nullptr when absent or no library).
void* symbol(const char* name);

}  // namespace nccl
}  // namespace coccl
