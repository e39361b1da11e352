/* tah codec plug-in: the instance and the device operations (tah_device.cu). */
#ifndef TAH_CODEC_H_
#define TAH_CODEC_H_

#include <stddef.h>
#include <stdint.h>

#include "coccl_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What create() returns: read-only afterwards. */
typedef struct {
  uint32_t row;    /* elements per row (token): a multiple of 64, 64..65536 */
  uint32_t lowL;   /* fraction of 3-bit rows, in units of 1/10000 */
  uint32_t strict; /* 1: a count that is not a multiple of row is refused (E_INVALID) */
  uint32_t had;    /* 1: pivot swap + Hadamard for outlier tiles (0: ablation, plain tiles only) */
  uint32_t scope;  /* where the 3-bit rows are the lowest-entropy fraction: TAH_SCOPE_* */
} tah_instance_t;

/* spec select=group (the default): of each group of 32 rows, the fraction the group's end adds
 * (tah_group_low), a choice local to the group; select=message: of the whole message
 * (TAH-Quant's rule), which needs every row's entropy before any row is coded. */
#define TAH_SCOPE_GROUP 0u
#define TAH_SCOPE_MESSAGE 1u

int tah_dtype_ok(int dtype);
/* 0 when count is acceptable for the instance (strict: a multiple of row), else E_INVALID. */
int tah_count_ok(const tah_instance_t* t, size_t count);

#ifdef TAH_WITH_DEVICE
/* Device workspace: the rows' keys (4 bytes a row, 256-aligned) and the tiles' entropy sums
 * (8 bytes a tile), after the fp32 sum (4 bytes an element, 256-aligned) of a decodeReduceEncode
 * of p >= 2 inputs. */
size_t tah_device_workspace(const tah_instance_t* t, size_t count, int p);
int tah_device_encode(const void* instance, const void* in, int dtype, size_t count, void* out,
                      void* ws, cudaStream_t stream);
int tah_device_decode(const void* instance, const void* in, size_t count, int dtype, void* out,
                      void* ws, cudaStream_t stream);
int tah_device_decode_accumulate(const void* instance, const void* const* ins, int n, size_t count,
                                 int dtype, float* acc, void* ws, cudaStream_t stream);
int tah_device_decode_reduce_encode(const void* instance, const void* const* ins, int p, int self,
                                    const void* selfIn, int dtype, size_t count, float scale,
                                    void* out, void* decoded, void* ws, cudaStream_t stream);
#endif

#ifdef __cplusplus
}
#endif

#endif /* TAH_CODEC_H_ */
