// q8 codec plug-in: the descriptor cocclCodecPlugin_v1, the spec parser and the host
// operations. Payload format and block math: q8_math.h. Device operations: q8_device.cu (built
// when CUDA is, Q8_WITH_DEVICE).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coccl_codec.h"
#include "q8_codec.h"
#include "q8_math.h"

static_assert(Q8_DT_F16 == cocclFloat16 && Q8_DT_F32 == cocclFloat32 && Q8_DT_BF16 == cocclBfloat16,
              "q8_math.h's dtype values are coccl.h's");

extern "C" int q8_dtype_ok(int dtype) {
  return dtype == Q8_DT_F32 || dtype == Q8_DT_F16 || dtype == Q8_DT_BF16;
}

namespace {

size_t blockOf(const void* instance) { return static_cast<const q8_instance_t*>(instance)->block; }

void setErr(char* err, size_t errLen, const char* msg) {
  if (err && errLen) snprintf(err, errLen, "%s", msg);
}

// ---- spec: "" or "block=32|64|128" --------------------------------------------------------

int create(const char* params, void** instance, char* err, size_t errLen) {
  if (!instance) return COCCL_CODEC_E_INVALID;
  uint32_t block = 64;
  const char* p = params ? params : "";
  while (*p) {
    const char* end = strchr(p, ',');
    const size_t len = end ? static_cast<size_t>(end - p) : strlen(p);
    char kv[64];
    if (len >= sizeof(kv)) {
      setErr(err, errLen, "q8: parameter too long (q8 takes block=32|64|128)");
      return COCCL_CODEC_E_INVALID;
    }
    memcpy(kv, p, len);
    kv[len] = '\0';
    if (strcmp(kv, "block=32") == 0) block = 32;
    else if (strcmp(kv, "block=64") == 0) block = 64;
    else if (strcmp(kv, "block=128") == 0) block = 128;
    else {
      char msg[160];
      snprintf(msg, sizeof(msg), "q8: bad parameter '%s' (q8 takes block=32|64|128)", kv);
      setErr(err, errLen, msg);
      return COCCL_CODEC_E_INVALID;
    }
    p += len + (end ? 1 : 0);
  }
  q8_instance_t* q = static_cast<q8_instance_t*>(malloc(sizeof(q8_instance_t)));
  if (!q) {
    setErr(err, errLen, "q8: out of memory");
    return COCCL_CODEC_E_INTERNAL;
  }
  q->block = block;
  *instance = q;
  return COCCL_CODEC_OK;
}

void destroy(void* instance) { free(instance); }

size_t canonicalSpec(const void* instance, char* buf, size_t len) {
  const int n = snprintf(buf, len, "q8:block=%u", static_cast<unsigned>(blockOf(instance)));
  return n < 0 ? 0 : static_cast<size_t>(n);
}

size_t blockElems(const void* instance) { return blockOf(instance); }

size_t encodedBytes(const void* instance, size_t count, int dtype) {
  const size_t g = blockOf(instance);
  return q8_blocks(count, g) * (g + 4);
}

size_t workspaceBytes(const void*, size_t, int, int, int) { return 0; }

// One encode and decode of an element of a block whose finite elements have absmax a
// (derivation: README.md "Error bound"): e = a/252 * (1 + 2^-14) + 2^-126 for the fp32 value
// (a/252: blocks with a NaN / Inf use 126 levels; others stay below a/254 * (1 + 2^-14)); a
// 16-bit output adds its rounding, at most min(e, 2^-8 * (a + e) + 2^-25) (the input is a
// point of that type's grid, so rounding the decoded value moves it by at most e).
double errorBound(const void*, double, double blockAbsMax) {
  const double a = blockAbsMax;
  const double e = a / 252.0 * (1.0 + 0x1p-14) + 0x1p-126;
  const double r = 0x1p-8 * (a + e) + 0x1p-25;
  return e + (r < e ? r : e);
}

// ---- host operations ----------------------------------------------------------------------

// Encodes block b (x[0, n) fp32, n <= g; the rest is zero padding) into the payload.
void encodeBlock(const float* x, size_t n, size_t g, size_t nb, size_t b, uint8_t* out) {
  float absmax = 0.0f;
  int nonfinite = 0;
  for (size_t i = 0; i < n; ++i) {
    nonfinite |= q8_is_nonfinite(x[i]);
    absmax = q8_max(absmax, q8_absmax_term(x[i]));
  }
  const float scale = q8_scale(absmax, nonfinite);
  int8_t* codes = reinterpret_cast<int8_t*>(out + b * g);
  for (size_t i = 0; i < g; ++i) codes[i] = i < n ? q8_code(x[i], scale) : 0;
  memcpy(out + nb * g + 4 * b, &scale, 4);
}

int encode(const void* instance, const void* in, int dtype, size_t count, void* out, void*) {
  if (count == 0) return COCCL_CODEC_OK;
  if (!q8_dtype_ok(dtype) || !in || !out) return COCCL_CODEC_E_INVALID;
  const size_t g = blockOf(instance), nb = q8_blocks(count, g);
  float x[128];
  for (size_t b = 0; b < nb; ++b) {
    const size_t base = b * g, n = count - base < g ? count - base : g;
    for (size_t i = 0; i < n; ++i) x[i] = q8_load(in, dtype, base + i);
    encodeBlock(x, n, g, nb, b, static_cast<uint8_t*>(out));
  }
  return COCCL_CODEC_OK;
}

int decode(const void* instance, const void* in, size_t count, int dtype, void* out, void*) {
  if (count == 0) return COCCL_CODEC_OK;
  if (!q8_dtype_ok(dtype) || !in || !out) return COCCL_CODEC_E_INVALID;
  const size_t g = blockOf(instance), nb = q8_blocks(count, g);
  const uint8_t* pay = static_cast<const uint8_t*>(in);
  for (size_t b = 0; b < nb; ++b) {
    const float s = q8_load_scale(pay, nb, g, b);
    const size_t end = count - b * g < g ? count : (b + 1) * g;
    for (size_t i = b * g; i < end; ++i)
      q8_store(out, dtype, i, q8_value(static_cast<int8_t>(pay[i]), s));
  }
  return COCCL_CODEC_OK;
}

// acc[i] = ((acc[i] + decode(ins[0])[i]) + decode(ins[1])[i]) + ... in fp32.
int decodeAccumulate(const void* instance, const void* const* ins, int n, size_t count, int dtype,
                     float* acc, void*) {
  if (count == 0) return COCCL_CODEC_OK;
  if (!q8_dtype_ok(dtype) || !ins || !acc || n < 1 || n > Q8_MAX_INPUTS)
    return COCCL_CODEC_E_INVALID;
  const size_t g = blockOf(instance), nb = q8_blocks(count, g);
  for (int k = 0; k < n; ++k) {
    const uint8_t* pay = static_cast<const uint8_t*>(ins[k]);
    if (!pay) return COCCL_CODEC_E_INVALID;
    for (size_t b = 0; b < nb; ++b) {
      const float s = q8_load_scale(pay, nb, g, b);
      const size_t end = count - b * g < g ? count : (b + 1) * g;
      for (size_t i = b * g; i < end; ++i)
        acc[i] = acc[i] + q8_value(static_cast<int8_t>(pay[i]), s);
    }
  }
  return COCCL_CODEC_OK;
}

// The owner step, block by block: acc = sum over r in rank order (first term assigned; the
// owner's raw input converted, the others decoded), acc *= scale when scale != 1, out =
// encode(acc as fp32: the payload does not depend on dtype), decoded = decode(out) in dtype.
int decodeReduceEncode(const void* instance, const void* const* ins, int p, int self,
                       const void* selfIn, int dtype, size_t count, float scale, void* out,
                       void* decoded, void*) {
  if (count == 0) return COCCL_CODEC_OK;
  if (!q8_dtype_ok(dtype) || p < 1 || p > Q8_MAX_INPUTS || self < 0 || self >= p || !selfIn ||
      !out || (p > 1 && !ins))
    return COCCL_CODEC_E_INVALID;
  for (int r = 0; r < p; ++r)
    if (r != self && !ins[r]) return COCCL_CODEC_E_INVALID;
  const size_t g = blockOf(instance), nb = q8_blocks(count, g);
  uint8_t* pay = static_cast<uint8_t*>(out);
  float acc[128];
  for (size_t b = 0; b < nb; ++b) {
    const size_t base = b * g, n = count - base < g ? count - base : g;
    for (int r = 0; r < p; ++r) {
      const uint8_t* in = static_cast<const uint8_t*>(ins ? ins[r] : nullptr);
      for (size_t i = 0; i < n; ++i) {
        const float z = r == self ? q8_load(selfIn, dtype, base + i)
                                  : q8_value(static_cast<int8_t>(in[base + i]),
                                             q8_load_scale(in, nb, g, b));
        acc[i] = r == 0 ? z : acc[i] + z;
      }
    }
    if (scale != 1.0f)
      for (size_t i = 0; i < n; ++i) acc[i] = acc[i] * scale;
    // selfIn may equal decoded: block b of selfIn is read in full above, before this write
    encodeBlock(acc, n, g, nb, b, pay);
    if (decoded) {
      const float s = q8_load_scale(pay, nb, g, b);
      for (size_t i = 0; i < n; ++i)
        q8_store(decoded, dtype, base + i,
                 q8_value(static_cast<int8_t>(pay[base + i]), s));
    }
  }
  return COCCL_CODEC_OK;
}

}  // namespace

#ifdef Q8_WITH_DEVICE
#define Q8_CAPS_DEVICE COCCL_CODEC_CAP_DEVICE
#define Q8_DEVICE_OPS                                                          \
  {q8_device_encode, q8_device_decode, q8_device_decode_accumulate,           \
   q8_device_decode_reduce_encode}
#else
#define Q8_CAPS_DEVICE 0u
#define Q8_DEVICE_OPS {nullptr, nullptr, nullptr, nullptr}
#endif

extern "C" COCCL_CODEC_PLUGIN_EXPORT const cocclCodecPlugin_v1_t cocclCodecPlugin_v1 = {
    sizeof(cocclCodecPlugin_v1_t),
    COCCL_CODEC_ABI_V1,
    "q8",
    1, /* formatVersion: bump when the payload bytes of some input change */
    COCCL_CODEC_DTYPE_BIT(cocclFloat32) | COCCL_CODEC_DTYPE_BIT(cocclFloat16) |
        COCCL_CODEC_DTYPE_BIT(cocclBfloat16),
    COCCL_CODEC_OP_BIT(cocclSum) | COCCL_CODEC_OP_BIT(cocclAvg),
    COCCL_CODEC_CAP_DETERMINISTIC | COCCL_CODEC_CAP_NONFINITE |
        COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE | Q8_CAPS_DEVICE,
    create,
    destroy,
    canonicalSpec,
    blockElems,
    encodedBytes,
    workspaceBytes,
    errorBound,
    {encode, decode, decodeAccumulate, decodeReduceEncode},
    Q8_DEVICE_OPS,
};
