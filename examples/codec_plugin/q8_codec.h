/* q8: the example codec plug-in's instance and its device operations (q8_device.cu). */
#ifndef Q8_CODEC_H_
#define Q8_CODEC_H_

#include <stddef.h>
#include <stdint.h>

#include "coccl_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What create() returns: read-only after create (every operation may run concurrently). */
typedef struct {
  uint32_t block; /* elements per block: 32, 64 or 128 */
} q8_instance_t;

#define Q8_MAX_INPUTS 64 /* p and n of decodeAccumulate / decodeReduceEncode: 1..64 */

/* 1 when dtype is one q8 encodes (fp32, fp16, bf16). */
int q8_dtype_ok(int dtype);

#ifdef Q8_WITH_DEVICE
int q8_device_encode(const void* instance, const void* in, int dtype, size_t count, void* out,
                     void* ws, cudaStream_t stream);
int q8_device_decode(const void* instance, const void* in, size_t count, int dtype, void* out,
                     void* ws, cudaStream_t stream);
int q8_device_decode_accumulate(const void* instance, const void* const* ins, int n,
                                size_t count, int dtype, float* acc, void* ws,
                                cudaStream_t stream);
int q8_device_decode_reduce_encode(const void* instance, const void* const* ins, int p, int self,
                                   const void* selfIn, int dtype, size_t count, float scale,
                                   void* out, void* decoded, void* ws, cudaStream_t stream);
#endif

#ifdef __cplusplus
}
#endif

#endif /* Q8_CODEC_H_ */
