// Memory type of a user pointer, decided without ever initialising CUDA: the CUDA driver
// (libcuda.so.1) is opened with dlopen and asked only when the process already initialised it
// (a process that never touched CUDA holds no device memory, and initialising CUDA in a parent
// before fork() would break its children). Works in host-only builds too, so that device
// pointers passed to a host-only library are rejected instead of dereferenced.
#pragma once

namespace coccl {

enum class MemKind { Host, Device };

// Device for device (cudaMalloc, VMM, async pool) and managed memory; Host for everything else:
// pageable or pinned host memory, unknown pointers, no CUDA driver, CUDA not initialised.
MemKind memKind(const void* p);

// True when the CUDA driver is loaded and initialised in this process (cuInit ran).
bool cudaDriverInitialised();

// True when CUDA loads kernels lazily in this process (cuModuleGetLoadingMode: the default from
// CUDA 12.2, CUDA_MODULE_LOADING=EAGER turns it off before CUDA starts); false when eager, or
// CUDA is not initialised. A kernel loaded on first launch may wait for the context's running
// kernels (CUDA programming guide, "Lazy Loading", hazards of concurrent execution).
bool cudaLazyModuleLoading();

}  // namespace coccl
