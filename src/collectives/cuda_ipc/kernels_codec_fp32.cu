// Compressed collective kernels for Fp32 data (see kernels_codec.inc).
#define COCCL_DEV_TAG Fp32Tag
#define COCCL_DEV_SUFFIX Fp32
#include "collectives/cuda_ipc/kernels_codec.inc"
