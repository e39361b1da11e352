// int4 codec: the AVX2 build of the host operations (this file is compiled with -mavx2 and
// -ffp-contract=off; chosen at run time only where the CPU has AVX2, int4_host_generic.cc).
#define INT4_HOST_ISA avx2
#define INT4_HOST_ISA_NAME "avx2"
#define INT4_HOST_OPS_FN hostOpsAvx2
#include "int4_host_ops.inc"
