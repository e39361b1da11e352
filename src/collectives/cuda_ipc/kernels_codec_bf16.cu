// Compressed collective kernels for Bf16 data (see kernels_codec.inc).
#define COCCL_DEV_TAG Bf16Tag
#define COCCL_DEV_SUFFIX Bf16
#include "collectives/cuda_ipc/kernels_codec.inc"
