// int4 codec: the device operations of the plug-in ABI (int4_device.cu), declared for the
// descriptor in int4_plugin.cc. Each only enqueues one kernel on `stream` (no allocation, no
// synchronisation; legal under graph capture) and returns COCCL_CODEC_E_CUDA if the launch
// failed. Bytes are those of the host operations (int4_block_host.h), bit for bit.
#pragma once

#include <stddef.h>

#include "coccl_codec.h"

namespace int4c {

int dEncode(const void* inst, const void* in, int dt, size_t count, void* out, void* ws,
            cudaStream_t stream);
int dDecode(const void* inst, const void* in, size_t count, int dt, void* out, void* ws,
            cudaStream_t stream);
int dDecodeAccumulate(const void* inst, const void* const* ins, int n, size_t count, int dt,
                      float* acc, void* ws, cudaStream_t stream);
int dDecodeReduceEncode(const void* inst, const void* const* ins, int p, int self,
                        const void* selfIn, int dt, size_t count, float scale, void* out,
                        void* decoded, void* ws, cudaStream_t stream);

}  // namespace int4c
