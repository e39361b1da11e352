// int4 codec: the generic build of the host operations (the compiler's baseline instruction
// set), and the choice among the builds (int4_host_ops.h).
#define INT4_HOST_ISA generic
#define INT4_HOST_ISA_NAME "generic"
#define INT4_HOST_OPS_FN hostOpsGeneric
#include "int4_host_ops.inc"

#include <stdio.h>
#include <string.h>

namespace int4c {

#ifndef COCCL_INT4_HOST_AVX2
const HostOps* hostOpsAvx2() { return nullptr; }
#endif

namespace {
bool cpuHasAvx2() {
#if defined(COCCL_INT4_HOST_AVX2) && (defined(__x86_64__) || defined(__i386__))
  static const bool has = [] {  // once per process (thread-safe static initialisation)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
  }();
  return has;
#else
  return false;
#endif
}
}  // namespace

const HostOps* selectHostOps(const char* want, char* err, size_t errLen) {
  // false too where this build has no AVX2 variant; nothing of the AVX2 object runs before it
  const bool avx2 = cpuHasAvx2();
  if (!want || !*want || strcmp(want, "auto") == 0) return avx2 ? hostOpsAvx2() : hostOpsGeneric();
  if (strcmp(want, "generic") == 0) return hostOpsGeneric();
  if (strcmp(want, "avx2") == 0) {
    if (avx2) return hostOpsAvx2();
    if (err && errLen)
      snprintf(err, errLen, "int4: COCCL_INT4_HOST_ISA=avx2, but %s",
#ifdef COCCL_INT4_HOST_AVX2
               "this CPU lacks AVX2 or FMA"
#else
               "this build has no AVX2 variant"
#endif
      );
    return nullptr;
  }
  if (err && errLen)
    snprintf(err, errLen, "int4: COCCL_INT4_HOST_ISA must be auto, generic or avx2, not '%.32s'",
             want);
  return nullptr;
}

}  // namespace int4c
