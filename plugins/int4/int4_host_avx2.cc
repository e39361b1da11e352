// int4 codec: the AVX2 build of the host operations (this file is compiled with -mavx2 -mfma
// and -ffp-contract=off: the explicit fmaf calls of int4_math.h are instructions, nothing is
// contracted; chosen at run time only where the CPU has AVX2 and FMA, int4_host_generic.cc).
#define INT4_HOST_ISA avx2
#define INT4_HOST_ISA_NAME "avx2"
#define INT4_HOST_OPS_FN hostOpsAvx2
#include "int4_host_ops.inc"
