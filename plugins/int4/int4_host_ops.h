// int4 codec: the host operations of the plug-in ABI, built more than once (int4_host_ops.inc):
// a generic build and, on x86-64 with GCC or Clang, an AVX2 build of the same source. The
// instance picks one at create() (the best this CPU runs, or COCCL_INT4_HOST_ISA). The bytes do
// not depend on the build: every fp32 operation is one IEEE operation written out, the code is
// compiled with -ffp-contract=off, and wider vectors only change how many lanes run at once
// (tests/plugins/int4: Int4HostIsa.* compare the builds byte for byte).
#pragma once

#include <stddef.h>

#include "int4_params.h"

namespace int4c {

// The host operations of one build, with the ABI's arguments (coccl_codec.h), dtype already
// checked (fp32, fp16, bf16) and count > 0.
struct HostOps {
  const char* isa;  // "generic", "avx2"
  void (*encode)(const Params& p, const void* in, int dt, size_t count, void* out);
  void (*decode)(const Params& p, const void* in, size_t count, int dt, void* out);
  void (*decodeAccumulate)(const Params& p, const void* const* ins, int n, size_t count,
                           float* acc);
  void (*decodeReduceEncode)(const Params& p, const void* const* ins, int np, int self,
                             const void* selfIn, int dt, size_t count, float scale, void* out,
                             void* decoded);
};

const HostOps* hostOpsGeneric();
const HostOps* hostOpsAvx2();  // nullptr when this build has no AVX2 variant

// The build for `want` ("auto" or null: AVX2 where both this build and the CPU have it, else
// generic; "generic"; "avx2"). Null with a message in `err` when `want` is unknown or the
// build or CPU lacks it.
const HostOps* selectHostOps(const char* want, char* err, size_t errLen);

}  // namespace int4c
