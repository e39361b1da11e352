// Device side of the CUDA IPC transport: 64-bit flags in (possibly peer-mapped) device memory,
// written with release and read with acquire semantics at system scope, so that data stored
// before a flag by one process's kernel is visible to another process's kernel that saw the
// flag. Waits are bounded (a deadline on the global nanosecond timer) and stop early when the
// host raises an abort word (host-mapped memory) or the flag carries the poison value.
#pragma once

#include <cuda_runtime.h>

#include <time.h>

#include <cstdint>

namespace coccl {
namespace ipc {

__device__ __forceinline__ uint64_t ldAcquireSys(const uint64_t* p) {
  uint64_t v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
#else
  v = *reinterpret_cast<const volatile uint64_t*>(p);
  __threadfence_system();
#endif
  return v;
}

__device__ __forceinline__ void stReleaseSys(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  __threadfence_system();
  *reinterpret_cast<volatile uint64_t*>(p) = v;
#endif
}

__device__ __forceinline__ uint64_t globalTimerNs() {
#if defined(__CUDA_ARCH__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else  // host compilation of the device code (tests/gpu/emu)
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
#endif
}

__device__ __forceinline__ void backoff(unsigned& ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  __nanosleep(ns);
#elif !defined(__CUDA_ARCH__) && defined(COCCL_DEVICE_EMULATION)
  coccl_emu_yield();  // ranks are OS threads sharing few cores
#endif
  ns = ns < 512u ? ns * 2u : 512u;
}

enum class WaitResult : int { Ok = 0, Timeout = 1, Poisoned = 2, Aborted = 3 };

// Waits until *flag >= target (poison, ~0, counts as failure). Checks the abort word (host
// memory) and the error word (device memory: a failure recorded by another block of this rank)
// every 64 polls.
__device__ __forceinline__ WaitResult waitAtLeast(const uint64_t* flag, uint64_t target,
                                                  uint64_t timeoutNs,
                                                  const volatile uint32_t* abortWord,
                                                  const volatile uint32_t* errorWord,
                                                  uint64_t poison) {
  uint64_t v = ldAcquireSys(flag);
  if (v >= target) return v == poison ? WaitResult::Poisoned : WaitResult::Ok;
  const uint64_t t0 = globalTimerNs();
  unsigned ns = 32, polls = 0;
  for (;;) {
    backoff(ns);
    v = ldAcquireSys(flag);
    if (v >= target) return v == poison ? WaitResult::Poisoned : WaitResult::Ok;
    if ((++polls & 63u) == 0) {
      if (*abortWord) return WaitResult::Aborted;
      if (*errorWord) return WaitResult::Poisoned;
      if (globalTimerNs() - t0 > timeoutNs) return WaitResult::Timeout;
    }
  }
}

}  // namespace ipc
}  // namespace coccl
