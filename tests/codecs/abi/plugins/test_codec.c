/* Test codec plug-ins (tests/codecs/abi/CMakeLists.txt builds one library per variant).
 *
 * The codec: blocks of B fp32 elements (B = `block` parameter, default 16; a partial last block
 * keeps its own length), each as one fp32 scale s = absmax / 127 followed by B int8 values
 * q = round(x / s); decode gives q * s. Host operations only, no workspace, deterministic.
 *
 * Every variant is this file with some of these defines (each breaks one rule on purpose):
 *   TC_NAME "name"         the codec name (default "good")
 *   TC_FORMAT n            formatVersion (default 1)
 *   TC_ABI n               abiVersion written in the descriptor (default COCCL_CODEC_ABI_V1)
 *   TC_STRUCT_DELTA n      structSize = sizeof(cocclCodecPlugin_v1_t) + n
 *   TC_SYMBOL_V2           export cocclCodecPlugin_v2 instead of cocclCodecPlugin_v1
 *   TC_CREATE_FAILS        create() always fails with a message
 *   TC_OVERFLOW            encode writes one byte past encodedBytes
 *   TC_OVERREAD            decode reads one byte past encodedBytes
 *   TC_NONDET              encode's scale bytes depend on a process-wide call counter
 *   TC_TIGHT_BOUND         errorBound far below the real error
 *   TC_ACC_FIRST_ONLY      decodeAccumulate adds only ins[0] of its nIn payloads
 *   TC_DRIFT               the scale is amax / 126.9 (not / 127): other bytes, same format
 *                          version (coccl_codec_check --against must fail it)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coccl_codec.h"

#ifndef TC_NAME
#define TC_NAME "good"
#endif
#ifndef TC_FORMAT
#define TC_FORMAT 1
#endif
#ifndef TC_ABI
#define TC_ABI COCCL_CODEC_ABI_V1
#endif
#ifndef TC_STRUCT_DELTA
#define TC_STRUCT_DELTA 0
#endif

typedef struct {
  size_t block;
} tc_instance;

static size_t tc_block(const void* inst) { return ((const tc_instance*)inst)->block; }

static int tc_create(const char* params, void** instance, char* err, size_t errLen) {
#ifdef TC_CREATE_FAILS
  (void)params;
  (void)instance;
  snprintf(err, errLen, "%s: this plug-in refuses every spec (params '%s')", TC_NAME, params);
  return COCCL_CODEC_E_INVALID;
#else
  size_t block = 16;
  if (params[0] != '\0') {
    char* end = NULL;
    if (strncmp(params, "block=", 6) != 0) {
      snprintf(err, errLen, "unknown parameter in '%s' (known: block)", params);
      return COCCL_CODEC_E_INVALID;
    }
    const unsigned long v = strtoul(params + 6, &end, 10);
    if (*end != '\0' || (v != 8 && v != 16 && v != 32 && v != 64)) {
      snprintf(err, errLen, "block=%s: must be 8, 16, 32 or 64", params + 6);
      return COCCL_CODEC_E_INVALID;
    }
    block = v;
  }
  tc_instance* p = (tc_instance*)malloc(sizeof(tc_instance));
  if (!p) {
    snprintf(err, errLen, "out of memory");
    return COCCL_CODEC_E_INTERNAL;
  }
  p->block = block;
  *instance = p;
  return COCCL_CODEC_OK;
#endif
}

static void tc_destroy(void* instance) { free(instance); }

static size_t tc_canonical(const void* inst, char* buf, size_t len) {
  const int n = snprintf(buf, len, "%s:block=%zu", TC_NAME, tc_block(inst));
  return n < 0 ? 0 : (size_t)n;
}

static size_t tc_encoded_bytes(const void* inst, size_t count, int dtype) {
  (void)dtype;
  const size_t b = tc_block(inst), full = count / b, rem = count % b;
  return full * (4 + b) + (rem ? 4 + rem : 0);
}

static double tc_error_bound(const void* inst, double rms, double absMax) {
  (void)inst;
  (void)rms;
#ifdef TC_TIGHT_BOUND
  return 1e-3 * absMax / 254.0; /* deliberately 1000x too small: coccl_perf's #wrong catches it */
#else
  return absMax / 254.0 * 1.001; /* half a step, plus fp32 rounding */
#endif
}

#ifdef TC_NONDET
static unsigned long tc_calls; /* deliberately process-wide state carried between calls */
#endif

static int tc_encode(const void* inst, const void* in, int dtype, size_t count, void* out,
                     void* ws) {
  (void)ws;
  if (dtype != cocclFloat32) return COCCL_CODEC_E_INVALID;
  const float* x = (const float*)in;
  unsigned char* o = (unsigned char*)out;
  const size_t b = tc_block(inst);
#ifdef TC_NONDET
  /* one count per call: two calls in a row never give the same bytes */
  const unsigned int flip = (unsigned int)(__atomic_add_fetch(&tc_calls, 1, __ATOMIC_RELAXED) & 1);
#endif
  for (size_t base = 0; base < count; base += b) {
    const size_t n = count - base < b ? count - base : b;
    float amax = 0.0f;
    for (size_t i = 0; i < n; ++i) {
      const float a = fabsf(x[base + i]);
      if (a > amax) amax = a;
    }
#ifdef TC_DRIFT
    float s = amax / 126.9f;
#else
    float s = amax / 127.0f;
#endif
    if (!isfinite(s)) s = 0.0f; /* non-finite input is not supported: the block decodes as 0 */
#ifdef TC_NONDET
    {
      /* the scale's last bit follows a process-wide call counter: within the error bound, but
       * not the same bytes twice */
      unsigned int bits;
      memcpy(&bits, &s, 4);
      if (s > 0.0f) bits ^= flip;
      memcpy(&s, &bits, 4);
    }
#endif
    memcpy(o, &s, 4);
    for (size_t i = 0; i < n; ++i) {
      float q = s > 0.0f ? rintf(x[base + i] / s) : 0.0f;
      if (!(q >= -127.0f)) q = q > 0.0f ? 127.0f : -127.0f; /* also NaN */
      if (q > 127.0f) q = 127.0f;
      int qi = (int)q;
      o[4 + i] = (unsigned char)(signed char)qi;
    }
    o += 4 + n;
  }
#ifdef TC_OVERFLOW
  if (count > 0) *o = 0x5a; /* one byte past encodedBytes(count) */
#endif
  return COCCL_CODEC_OK;
}

/* The value of element i (of a block of n starting at p) as fp32; garbage scales stay memory
 * safe (any float), they only give unspecified values. */
static float tc_value(const unsigned char* blk, size_t i) {
  float s;
  memcpy(&s, blk, 4);
  return (float)(signed char)blk[4 + i] * s;
}

static int tc_decode(const void* inst, const void* in, size_t count, int dtype, void* out,
                     void* ws) {
  (void)ws;
  if (dtype != cocclFloat32) return COCCL_CODEC_E_INVALID;
  const unsigned char* p = (const unsigned char*)in;
  float* y = (float*)out;
  const size_t b = tc_block(inst);
#ifdef TC_OVERREAD
  if (count > 0) {
    volatile unsigned char sink = p[tc_encoded_bytes(inst, count, dtype)];
    (void)sink;
  }
#endif
  for (size_t base = 0; base < count; base += b) {
    const size_t n = count - base < b ? count - base : b;
    for (size_t i = 0; i < n; ++i) y[base + i] = tc_value(p, i);
    p += 4 + n;
  }
  return COCCL_CODEC_OK;
}

static int tc_decode_accumulate(const void* inst, const void* const* ins, int nIn, size_t count,
                                int dtype, float* acc, void* ws) {
  (void)ws;
  if (dtype != cocclFloat32 || nIn < 1) return COCCL_CODEC_E_INVALID;
  const size_t b = tc_block(inst);
#ifdef TC_ACC_FIRST_ONLY
  nIn = 1;
#endif
  for (int k = 0; k < nIn; ++k) {
    const unsigned char* p = (const unsigned char*)ins[k];
    for (size_t base = 0; base < count; base += b) {
      const size_t n = count - base < b ? count - base : b;
      for (size_t i = 0; i < n; ++i) acc[base + i] = acc[base + i] + tc_value(p, i);
      p += 4 + n;
    }
  }
  return COCCL_CODEC_OK;
}

#ifdef TC_SYMBOL_V2
#define TC_SYMBOL cocclCodecPlugin_v2 /* a future ABI version: this coccl must refuse it */
#else
#define TC_SYMBOL cocclCodecPlugin_v1
#endif

COCCL_CODEC_PLUGIN_EXPORT const cocclCodecPlugin_v1_t TC_SYMBOL = {
    (uint32_t)(sizeof(cocclCodecPlugin_v1_t) + TC_STRUCT_DELTA),
    TC_ABI,
    TC_NAME,
    TC_FORMAT,
    COCCL_CODEC_DTYPE_BIT(cocclFloat32),
    COCCL_CODEC_OP_BIT(cocclSum) | COCCL_CODEC_OP_BIT(cocclAvg),
    COCCL_CODEC_CAP_DETERMINISTIC,
    tc_create,
    tc_destroy,
    tc_canonical,
    tc_block,
    tc_encoded_bytes,
    NULL, /* no workspace */
    tc_error_bound,
    {tc_encode, tc_decode, tc_decode_accumulate, NULL},
    {NULL, NULL, NULL, NULL},
};
