// tah codec plug-in: the descriptor cocclCodecPlugin_v1, the spec parser and the host
// operations. Payload format and scalar math: tah_math.h (README.md for the long form). Device
// operations: tah_device.cu (built with CUDA, TAH_WITH_DEVICE).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>

#include "coccl_codec.h"
#include "tah_codec.h"
#include "tah_math.h"

static_assert(TAH_DT_F16 == cocclFloat16 && TAH_DT_F32 == cocclFloat32 &&
                  TAH_DT_BF16 == cocclBfloat16,
              "tah_math.h's dtype values are coccl.h's");

extern "C" int tah_dtype_ok(int dtype) {
  return dtype == TAH_DT_F32 || dtype == TAH_DT_F16 || dtype == TAH_DT_BF16;
}
extern "C" int tah_count_ok(const tah_instance_t* t, size_t count) {
  return t->strict && count % t->row != 0 ? COCCL_CODEC_E_INVALID : COCCL_CODEC_OK;
}

namespace {

const tah_instance_t* inst(const void* p) {
  return static_cast<const tah_instance_t*>(p);
}

void setErr(char* err, size_t errLen, const char* msg) {
  if (err && errLen) snprintf(err, errLen, "%s", msg);
}

// "0.2" -> 2000 (units of 1/10000): digits, at most one '.', at most 4 decimals, <= 1.
bool parseLow(const char* v, uint32_t* out) {
  uint32_t ip = 0, fp = 0, fd = 0;
  const char* p = v;
  if (!*p) return false;
  while (*p >= '0' && *p <= '9') {
    ip = ip * 10 + static_cast<uint32_t>(*p++ - '0');
    if (ip > 1) return false;
  }
  if (*p == '.') {
    ++p;
    while (*p >= '0' && *p <= '9') {
      if (++fd > 4) return false;
      fp = fp * 10 + static_cast<uint32_t>(*p++ - '0');
    }
  }
  if (*p) return false;
  for (; fd < 4; ++fd) fp *= 10;
  const uint32_t l = ip * TAH_LOW_DEN + fp;
  if (l > TAH_LOW_DEN) return false;
  *out = l;
  return true;
}

// ---- spec: "row=R,low=F,strict=0|1,had=0|1,select=group|message" ----------------------------

#define TAH_USAGE "(tah takes row=N,low=F,strict=0|1,had=0|1,select=group|message)"

int create(const char* params, void** instance, char* err, size_t errLen) {
  if (!instance) return COCCL_CODEC_E_INVALID;
  tah_instance_t t{4096, 2000, 1, 1, TAH_SCOPE_GROUP};
  const char* p = params ? params : "";
  while (*p) {
    const char* end = strchr(p, ',');
    const size_t len = end ? static_cast<size_t>(end - p) : strlen(p);
    char kv[64], msg[192];
    if (len >= sizeof(kv)) {
      setErr(err, errLen, "tah: parameter too long " TAH_USAGE);
      return COCCL_CODEC_E_INVALID;
    }
    memcpy(kv, p, len);
    kv[len] = '\0';
    char* eq = strchr(kv, '=');
    const char* val = eq ? eq + 1 : "";
    if (eq) *eq = '\0';
    if (strcmp(kv, "row") == 0) {
      char* e = nullptr;
      const unsigned long r = strtoul(val, &e, 10);
      if (!*val || *e || r < TAH_TILE || r > TAH_MAX_ROW || r % TAH_TILE) {
        snprintf(msg, sizeof(msg),
                 "tah: row=%s: the row (hidden size) must be a multiple of 64 in 64..65536", val);
        setErr(err, errLen, msg);
        return COCCL_CODEC_E_INVALID;
      }
      t.row = static_cast<uint32_t>(r);
    } else if (strcmp(kv, "low") == 0) {
      if (!parseLow(val, &t.lowL)) {
        snprintf(msg, sizeof(msg),
                 "tah: low=%s: the fraction of 3-bit rows must be a decimal in [0, 1] with at "
                 "most 4 decimals",
                 val);
        setErr(err, errLen, msg);
        return COCCL_CODEC_E_INVALID;
      }
    } else if (strcmp(kv, "strict") == 0 && (!strcmp(val, "0") || !strcmp(val, "1"))) {
      t.strict = val[0] == '1';
    } else if (strcmp(kv, "had") == 0 && (!strcmp(val, "0") || !strcmp(val, "1"))) {
      t.had = val[0] == '1';
    } else if (strcmp(kv, "select") == 0 && (!strcmp(val, "group") || !strcmp(val, "message"))) {
      t.scope = val[0] == 'g' ? TAH_SCOPE_GROUP : TAH_SCOPE_MESSAGE;
    } else {
      snprintf(msg, sizeof(msg), "tah: bad parameter '%s%s%s' " TAH_USAGE, kv, eq ? "=" : "", val);
      setErr(err, errLen, msg);
      return COCCL_CODEC_E_INVALID;
    }
    p += len + (end ? 1 : 0);
  }
  tah_instance_t* q = static_cast<tah_instance_t*>(malloc(sizeof(tah_instance_t)));
  if (!q) {
    setErr(err, errLen, "tah: out of memory");
    return COCCL_CODEC_E_INTERNAL;
  }
  *q = t;
  *instance = q;
  return COCCL_CODEC_OK;
}

void destroy(void* instance) {
  free(instance);
}

size_t canonicalSpec(const void* instance, char* buf, size_t len) {
  const tah_instance_t* t = inst(instance);
  char low[16];
  const uint32_t fp = t->lowL % TAH_LOW_DEN;
  if (fp == 0) {
    snprintf(low, sizeof(low), "%u", t->lowL / TAH_LOW_DEN);
  } else {
    snprintf(low, sizeof(low), "%u.%04u", t->lowL / TAH_LOW_DEN, fp);
    for (size_t n = strlen(low); low[n - 1] == '0'; --n) low[n - 1] = '\0';
  }
  const int n = snprintf(buf, len, "tah:row=%u,low=%s,strict=%u,had=%u,select=%s", t->row, low,
                         t->strict, t->had, t->scope == TAH_SCOPE_GROUP ? "group" : "message");
  return n < 0 ? 0 : static_cast<size_t>(n);
}

size_t blockElems(const void* instance) {
  return inst(instance)->row;
}

size_t encodedBytes(const void* instance, size_t count, int) {
  const tah_instance_t* t = inst(instance);
  if (count == 0 || tah_count_ok(t, count) != COCCL_CODEC_OK) return 0;
  return tah_layout(count, t->row, t->lowL).total;
}

size_t pad256(size_t n) {
  return (n + 255) & ~static_cast<size_t>(255);
}

// Host: the rows' (key, index) pairs (8 bytes a row), after the fp32 sum of a decodeReduceEncode
// of p >= 2 inputs (4 bytes an element; p = 1 scales the input on the fly). Device:
// tah_device_workspace.
size_t workspaceBytes(const void* instance, size_t count, int, int p, int onDevice) {
  const tah_instance_t* t = inst(instance);
  if (count == 0) return 0;
#ifdef TAH_WITH_DEVICE
  if (onDevice) return tah_device_workspace(t, count, p);
#else
  if (onDevice) return 0;
#endif
  const tah_layout_t L = tah_layout(count, t->row, t->lowL);
  return (p >= 2 ? pad256(4 * count) : 0) + 8 * L.rows;
}

// One encode and decode of an element of a row whose largest magnitude is A (README.md "Error
// bound"): a 3-bit tile has range <= 2A, so step / 2 <= A / 7; fp16 / bf16 rounding of zero and
// scale adds at most A / 128, fp32 arithmetic and fp16 subnormals 2^-20; a Hadamard tile is kept
// only when its largest error is below the plain coding's; a 16-bit output adds its rounding.
double errorBound(const void*, double, double blockAbsMax) {
  const double a = blockAbsMax;
  const double e = a * (1.0 / 7.0 + 1.0 / 128.0) + 0x1p-20;
  const double r = 0x1p-8 * (a + e) + 0x1p-25;
  return e + (r < e ? r : e);
}

// ---- tiles --------------------------------------------------------------------------------

struct TileCode {
  uint32_t meta;
  unsigned flag;
  unsigned c[TAH_TILE];
};

// Quantizes v at q levels into tc (meta, wide flag, codes) and returns the largest error of its
// decoded values (after the inverse transform when had) against x.
float quantize(const float* v, const float* x, int q, int had, unsigned pivot, TileCode* tc) {
  float mn = v[0], mx = v[0];
  for (int i = 1; i < TAH_TILE; ++i) {
    mn = tah_min(mn, v[i]);
    mx = tah_max(mx, v[i]);
  }
  unsigned wide = 0;
  tc->meta = tah_tile_meta(mn, mx, q, &wide);
  tc->flag = wide | (had ? TAH_FLAG_HAD | pivot : 0u);
  float z, s;
  tah_meta_zs(tc->meta, tc->flag, &z, &s);
  const float inv = tah_inv(s);
  float d[TAH_TILE];
  for (int i = 0; i < TAH_TILE; ++i) {
    tc->c[i] = tah_code(v[i], z, inv, q);
    d[i] = tah_value(tc->c[i], z, s);
  }
  if (had) {
    tah_wht64(d);
    std::swap(d[0], d[pivot]);
  }
  float err = 0.0f;
  for (int i = 0; i < TAH_TILE; ++i) err = tah_max(err, tah_abs(TAH_SUB(d[i], x[i])));
  return err;
}

void encodeTile(const float* x, int q, bool had, TileCode* out) {
  float m1 = 0.0f;
  unsigned p = 0;
  for (unsigned i = 0; i < TAH_TILE; ++i) {
    const float a = tah_abs(x[i]);
    if (a > m1) m1 = a, p = i;
  }
  float m2 = 0.0f;
  for (unsigned i = 0; i < TAH_TILE; ++i)
    if (i != p) m2 = tah_max(m2, tah_abs(x[i]));
  const float errPlain = quantize(x, x, q, 0, 0, out);
  if (!had || !(m1 > 0.0f) || !(TAH_MUL(2.0f, m2) <= m1)) return;
  float y[TAH_TILE];
  memcpy(y, x, sizeof(y));
  std::swap(y[0], y[p]);
  tah_wht64(y);
  for (int i = 0; i < TAH_TILE; ++i) y[i] = tah_fin(y[i]);
  TileCode h;
  if (quantize(y, x, q, 1, p, &h) < errPlain) *out = h;
}

void storeTile(const TileCode& tc, int three, uint8_t* codes, uint8_t* pay, const tah_layout_t& L,
               size_t tile) {
  memcpy(pay + L.metaOff + 4 * tile, &tc.meta, 4);
  pay[L.flagOff + tile] = static_cast<uint8_t>(tc.flag);
  if (three) {
    for (int m = 0; m < 8; ++m) {
      uint32_t w = 0;
      for (int i = 0; i < 8; ++i) w |= static_cast<uint32_t>(tc.c[8 * m + i]) << (3 * i);
      codes[3 * m] = static_cast<uint8_t>(w), codes[3 * m + 1] = static_cast<uint8_t>(w >> 8);
      codes[3 * m + 2] = static_cast<uint8_t>(w >> 16);
    }
  } else {
    for (int j = 0; j < 32; ++j)
      codes[j] = static_cast<uint8_t>(tc.c[2 * j] | tc.c[2 * j + 1] << 4);
  }
}

// Decodes tile `tile` (row r, tile t) of a payload into d[0, 64) (fp32).
void decodeTile(const uint8_t* pay, const tah_layout_t& L, size_t R, size_t r, size_t t, float* d) {
  int three = 0;
  size_t off = 0;
  if (!tah_row_place(pay, &L, R, r, &three, &off)) {
    for (int i = 0; i < TAH_TILE; ++i) d[i] = 0.0f;
    return;
  }
  const size_t tile = r * (R / TAH_TILE) + t;
  uint32_t meta;
  memcpy(&meta, pay + L.metaOff + 4 * tile, 4);
  const unsigned flag = pay[L.flagOff + tile];
  float z, s;
  tah_meta_zs(meta, flag, &z, &s);
  const uint8_t* c = pay + L.codeOff + off + t * (three ? 24 : 32);
  for (int i = 0; i < TAH_TILE; ++i) {
    unsigned code;
    if (three) {
      const int m = i / 8, k = i % 8;
      const uint32_t w = c[3 * m] | c[3 * m + 1] << 8 | static_cast<uint32_t>(c[3 * m + 2]) << 16;
      code = (w >> (3 * k)) & 7u;
    } else {
      code = (c[i / 2] >> (4 * (i & 1))) & 15u;
    }
    d[i] = tah_value(code, z, s);
  }
  if (flag & TAH_FLAG_HAD) {
    tah_wht64(d);
    std::swap(d[0], d[flag & TAH_FLAG_PIVOT]);
  }
}

// ---- host operations ----------------------------------------------------------------------

// Encodes in[0, count) (dtype; rows past count read as 0) times scale (the values
// fin(fin(x) * scale), fin: non-finite to 0; scale 1 for encode) into out; keys: 8 bytes a row.
int encodeImpl(const tah_instance_t* t, const void* in, int dtype, size_t count, float scale,
               uint8_t* out, uint64_t* keys) {
  const size_t R = t->row, T = R / TAH_TILE;
  const tah_layout_t L = tah_layout(count, R, t->lowL);
  float x[TAH_TILE], a[TAH_TILE], u[TAH_TILE];
  auto load = [&](size_t r, size_t tt) {
    for (size_t i = 0; i < TAH_TILE; ++i) {
      const size_t e = r * R + tt * TAH_TILE + i;
      x[i] = e < count ? tah_load(in, dtype, e) : 0.0f;
      if (scale != 1.0f) x[i] = tah_fin(TAH_MUL(x[i], scale));
    }
  };
  // bit map: the 3-bit rows, those of smallest (entropy key, index) of each group of 32 rows
  // (select=group: tah_group_low of them) or of the message (select=message: n3 of them)
  memset(out, 0, L.metaOff);
  if (L.n3 > 0) {
    for (size_t r = 0; r < L.rows; ++r) {
      float S = 0.0f, U = 0.0f;
      for (size_t tt = 0; tt < T; ++tt) {
        load(r, tt);
        for (int i = 0; i < TAH_TILE; ++i) a[i] = tah_abs(x[i]), u[i] = tah_ulog(a[i]);
        S = TAH_ADD(S, tah_tile_sum(a));
        U = TAH_ADD(U, tah_tile_sum(u));
      }
      keys[r] = static_cast<uint64_t>(tah_row_key(S, U)) << 32 | r;
    }
    // the n smallest of keys[b, e) are 3-bit
    auto lowest = [&](size_t b, size_t e, size_t n) {
      if (n < e - b) std::nth_element(keys + b, keys + b + n, keys + e);
      for (size_t k = b; k < b + n; ++k) {
        const size_t r = static_cast<uint32_t>(keys[k]);
        out[8 * (r / 32) + (r % 32) / 8] |= static_cast<uint8_t>(1u << (r % 8));
      }
    };
    if (t->scope == TAH_SCOPE_GROUP) {
      for (size_t g = 0; g < L.groups; ++g) {
        uint32_t before;
        const uint32_t n = tah_group_low(L.rows, t->lowL, g, &before);
        lowest(32 * g, std::min(32 * g + 32, L.rows), n);
        memcpy(out + 8 * g + 4, &before, 4);
      }
    } else {
      lowest(0, L.rows, L.n3);
      uint32_t prefix = 0;
      for (size_t g = 0; g < L.groups; ++g) {
        uint32_t bits;
        memcpy(&bits, out + 8 * g, 4);
        memcpy(out + 8 * g + 4, &prefix, 4);
        prefix += static_cast<uint32_t>(__builtin_popcount(bits));
      }
    }
  }
  for (size_t i = L.flagOff + L.tiles; i < L.codeOff; ++i) out[i] = 0;  // flag padding
  TileCode tc;
  for (size_t r = 0; r < L.rows; ++r) {
    int three = 0;
    size_t off = 0;
    tah_row_place(out, &L, R, r, &three, &off);
    for (size_t tt = 0; tt < T; ++tt) {
      load(r, tt);
      encodeTile(x, three ? 7 : 15, t->had != 0, &tc);
      storeTile(tc, three, out + L.codeOff + off + tt * (three ? 24 : 32), out, L, r * T + tt);
    }
  }
  return COCCL_CODEC_OK;
}

int encode(const void* instance, const void* in, int dtype, size_t count, void* out, void* ws) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || !in || !out || !ws || tah_count_ok(t, count))
    return COCCL_CODEC_E_INVALID;
  return encodeImpl(t, in, dtype, count, 1.0f, static_cast<uint8_t*>(out),
                    static_cast<uint64_t*>(ws));
}

// Calls fn(element index, decoded fp32 value) for every element < count of the payload.
template <class F>
void forEachDecoded(const tah_instance_t* t, const uint8_t* pay, size_t count, F fn) {
  const size_t R = t->row, T = R / TAH_TILE;
  const tah_layout_t L = tah_layout(count, R, t->lowL);
  float d[TAH_TILE];
  for (size_t r = 0; r < L.rows; ++r)
    for (size_t tt = 0; tt < T; ++tt) {
      const size_t base = r * R + tt * TAH_TILE;
      if (base >= count) return;
      decodeTile(pay, L, R, r, tt, d);
      for (size_t i = 0; i < TAH_TILE && base + i < count; ++i) fn(base + i, d[i]);
    }
}

int decode(const void* instance, const void* in, size_t count, int dtype, void* out, void*) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || !in || !out || tah_count_ok(t, count)) return COCCL_CODEC_E_INVALID;
  forEachDecoded(t, static_cast<const uint8_t*>(in), count,
                 [&](size_t i, float v) { tah_store(out, dtype, i, v); });
  return COCCL_CODEC_OK;
}

// acc[i] = ((acc[i] + decode(ins[0])[i]) + decode(ins[1])[i]) + ... in fp32.
int decodeAccumulate(const void* instance, const void* const* ins, int n, size_t count, int dtype,
                     float* acc, void*) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || !ins || !acc || n < 1 || n > TAH_MAX_INPUTS || tah_count_ok(t, count))
    return COCCL_CODEC_E_INVALID;
  for (int k = 0; k < n; ++k)
    if (!ins[k]) return COCCL_CODEC_E_INVALID;
  for (int k = 0; k < n; ++k)
    forEachDecoded(t, static_cast<const uint8_t*>(ins[k]), count,
                   [&](size_t i, float v) { acc[i] = TAH_ADD(acc[i], v); });
  return COCCL_CODEC_OK;
}

// The owner step: acc = sum over r in rank order (first term assigned; the owner's raw input,
// the others decoded), acc *= scale when scale != 1, out = encode(acc as fp32), decoded =
// decode(out) in dtype. The bit map depends on every row (select=message) or on every row of a
// group, so acc is built whole first (ws); with
// p = 1 acc is selfIn * scale, encoded on the fly (encode maps non-finite values to 0 either way).
int decodeReduceEncode(const void* instance, const void* const* ins, int p, int self,
                       const void* selfIn, int dtype, size_t count, float scale, void* out,
                       void* decoded, void* ws) {
  if (count == 0) return COCCL_CODEC_OK;
  const tah_instance_t* t = inst(instance);
  if (!tah_dtype_ok(dtype) || p < 1 || p > TAH_MAX_INPUTS || self < 0 || self >= p || !selfIn ||
      !out || !ws || (p > 1 && !ins) || tah_count_ok(t, count))
    return COCCL_CODEC_E_INVALID;
  for (int r = 0; r < p; ++r)
    if (r != self && !ins[r]) return COCCL_CODEC_E_INVALID;
  if (p == 1) {
    encodeImpl(t, selfIn, dtype, count, scale, static_cast<uint8_t*>(out),
               static_cast<uint64_t*>(ws));
    if (decoded) decode(instance, out, count, dtype, decoded, nullptr);
    return COCCL_CODEC_OK;
  }
  float* acc = static_cast<float*>(ws);
  for (int r = 0; r < p; ++r) {
    if (r == self) {
      for (size_t i = 0; i < count; ++i) {
        const float z = tah_load_raw(selfIn, dtype, i);
        acc[i] = r == 0 ? z : TAH_ADD(acc[i], z);
      }
    } else {
      forEachDecoded(t, static_cast<const uint8_t*>(ins[r]), count,
                     [&](size_t i, float v) { acc[i] = r == 0 ? v : TAH_ADD(acc[i], v); });
    }
  }
  if (scale != 1.0f)
    for (size_t i = 0; i < count; ++i) acc[i] = TAH_MUL(acc[i], scale);
  encodeImpl(t, acc, TAH_DT_F32, count, 1.0f, static_cast<uint8_t*>(out),
             reinterpret_cast<uint64_t*>(static_cast<char*>(ws) + pad256(4 * count)));
  if (decoded) decode(instance, out, count, dtype, decoded, nullptr);
  return COCCL_CODEC_OK;
}

}  // namespace

#ifdef TAH_WITH_DEVICE
#define TAH_CAPS_DEVICE COCCL_CODEC_CAP_DEVICE
#define TAH_DEVICE_OPS                                                  \
  {                                                                     \
    tah_device_encode, tah_device_decode, tah_device_decode_accumulate, \
        tah_device_decode_reduce_encode                                 \
  }
#else
#define TAH_CAPS_DEVICE 0u
#define TAH_DEVICE_OPS \
  { nullptr, nullptr, nullptr, nullptr }
#endif

extern "C" COCCL_CODEC_PLUGIN_EXPORT const cocclCodecPlugin_v1_t cocclCodecPlugin_v1 = {
    sizeof(cocclCodecPlugin_v1_t),
    COCCL_CODEC_ABI_V1,
    "tah",
    2, /* formatVersion: bump when the payload bytes of some input change (2: select=group) */
    COCCL_CODEC_DTYPE_BIT(cocclFloat32) | COCCL_CODEC_DTYPE_BIT(cocclFloat16) |
        COCCL_CODEC_DTYPE_BIT(cocclBfloat16),
    COCCL_CODEC_OP_BIT(cocclSum) | COCCL_CODEC_OP_BIT(cocclAvg),
    COCCL_CODEC_CAP_DETERMINISTIC | COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE | TAH_CAPS_DEVICE,
    create,
    destroy,
    canonicalSpec,
    blockElems,
    encodedBytes,
    workspaceBytes,
    errorBound,
    {encode, decode, decodeAccumulate, decodeReduceEncode},
    TAH_DEVICE_OPS,
};
