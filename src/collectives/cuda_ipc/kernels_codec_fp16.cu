// Compressed collective kernels for Fp16 data (see kernels_codec.inc).
#define COCCL_DEV_TAG Fp16Tag
#define COCCL_DEV_SUFFIX Fp16
#include "collectives/cuda_ipc/kernels_codec.inc"
