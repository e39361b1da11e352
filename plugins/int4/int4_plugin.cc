// The int4 codec plug-in (issue 16): SDP4Bit-style symmetric 4-bit block quantisation with an
// optional Walsh-Hadamard rotation, written against include/coccl_codec.h only.
//
// Spec: int4[:block=32|64|...|2048 (128), rotate=0|1|auto (auto), round=rne|stochastic (rne),
//             seed=0..2^64-1 (0; used by round=stochastic)].
// Canonical: "int4:block=G,rotate=R,round=X,seed=N". Payload format: int4_params.h; block math
// (modes, rotation, rounding, the stochastic generator): int4_math.h; README.md in this folder.
//
// errorBound(rms, absmax) (one encode/decode, finite input; emax = 1/2 for rne, 1 for
// stochastic, the largest code-domain rounding error; S = min(G, 128)):
//   PLAIN: |x - q c| <= emax * c = emax * absmax / 7.
//   ROTATED: the code errors e_j (|e_j| <= emax) map back as (H_S e)_i * m / (7 S), with
//     |(H_S e)_i| <= S emax and m = max_j |(H_S x)_j| <= sqrt(S) ||x_sub||_2 <= sqrt(S) *
//     min(sqrt(S) absmax, sqrt(G) rms): |err_i| <= emax * sqrt(S) * min(sqrt(S) absmax,
//     sqrt(G) rms) / 7. rotate=auto with rne rotates a block only when its squared error is
//     not larger than the plain form's (<= G (absmax / 14)^2), so there |err_i| <= ||err||_2
//     <= sqrt(G) absmax / 14 as well (+1% for the fp32 comparison); the smaller of the two.
//   RAW (non-finite blocks, the finite elements): |err_i| <= absmax / 12 (rne on a 6-level grid).
//   Plus fp32 arithmetic: the forward transform's rounding (log2 S stages, each at most
//   2^-24 relative of values <= S absmax) and the flag bit (1 ulp of c), bounded by
//   absmax * S * 2^-16; 2^-96 absolute (blocks below 2^-96 decode to zero); and the rounding
//   of a 16-bit output type, 2^-8 of (absmax + the bound).
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <new>
#include <string>

#include "coccl_codec.h"
#include "int4_block_host.h"

#ifdef COCCL_INT4_DEVICE
#include "int4_device.h"
#endif

namespace int4c {
namespace {

const Params& P(const void* inst) { return *static_cast<const Params*>(inst); }

bool parseU64(const std::string& s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  for (char ch : s)
    if (ch < '0' || ch > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long x = strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *v = static_cast<uint64_t>(x);
  return true;
}

int fail(char* err, size_t errLen, const std::string& msg) {
  if (err && errLen) snprintf(err, errLen, "%s", msg.c_str());
  return COCCL_CODEC_E_INVALID;
}

int create(const char* params, void** instance, char* err, size_t errLen) {
  Params p;
  std::string rest = params ? params : "";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string kv = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return fail(err, errLen, "int4: '" + kv + "' is not key=value");
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "block") {
      uint64_t b = 0;
      if (!parseU64(v, &b) || b < 32 || b > 2048 || (b & (b - 1)) != 0)
        return fail(err, errLen, "int4: block must be a power of two from 32 to 2048, not '" + v + "'");
      p.block = static_cast<int>(b);
    } else if (k == "rotate") {
      if (v == "0") p.mode = kModePlain;
      else if (v == "1") p.mode = kModeRotated;
      else if (v == "auto") p.mode = kModeAuto;
      else return fail(err, errLen, "int4: rotate must be 0, 1 or auto, not '" + v + "'");
    } else if (k == "round") {
      if (v == "rne") p.stochastic = false;
      else if (v == "stochastic") p.stochastic = true;
      else return fail(err, errLen, "int4: round must be rne or stochastic, not '" + v + "'");
    } else if (k == "seed") {
      if (!parseU64(v, &p.seed))
        return fail(err, errLen, "int4: seed must be an integer 0..18446744073709551615, not '" + v + "'");
    } else {
      return fail(err, errLen, "int4: unknown parameter '" + k + "' (block, rotate, round, seed)");
    }
  }
  Params* inst = new (std::nothrow) Params(p);
  if (!inst) return fail(err, errLen, "int4: out of memory");
  *instance = inst;
  return COCCL_CODEC_OK;
}

void destroy(void* instance) { delete static_cast<Params*>(instance); }

size_t canonicalSpec(const void* inst, char* buf, size_t len) {
  const Params& p = P(inst);
  const char* rot = p.mode == kModePlain ? "0" : p.mode == kModeRotated ? "1" : "auto";
  const int n = snprintf(buf, len, "int4:block=%d,rotate=%s,round=%s,seed=%llu", p.block, rot,
                         p.stochastic ? "stochastic" : "rne", static_cast<unsigned long long>(p.seed));
  return n < 0 ? 0 : static_cast<size_t>(n);
}

size_t blockElems(const void* inst) { return static_cast<size_t>(P(inst).block); }
size_t encodedBytes(const void* inst, size_t count, int) { return payloadBytes(P(inst), count); }
size_t workspaceBytes(const void*, size_t, int, int, int) { return 0; }

double errorBound(const void* inst, double rms, double absmax) {
  const Params& p = P(inst);
  const double G = p.block, S = p.sub(), emax = p.stochastic ? 1.0 : 0.5;
  const double plain = emax * absmax / 7.0;
  const double rotated = emax * sqrt(S) * fmin(sqrt(S) * absmax, sqrt(G) * rms) / 7.0;
  // auto with rne: the block's total error is at most the plain form's, sqrt(G) absmax / 14
  // (1% for the fp32 comparison); with stochastic rounding only the rotated bound holds.
  const double autoRot = p.stochastic ? rotated : fmin(rotated, 1.01 * sqrt(G) * absmax / 14.0);
  double core = p.mode == kModePlain ? plain
                : p.mode == kModeRotated ? fmax(plain, rotated)
                                         : fmax(plain, autoRot);
  core = fmax(core, absmax / 12.0) + absmax * S * 0x1p-16 + 0x1p-96;
  return core + 0x1p-8 * (absmax + core);
}

// ---- host operations --------------------------------------------------------------------
template <typename T>
void loadBlock(const T* in, size_t n, float* x, int g) {
  size_t i = 0;
  for (; i < n; ++i) x[i] = Io<T>::load(in[i]);
  for (; i < static_cast<size_t>(g); ++i) x[i] = 0.0f;
}

template <typename T>
void storeBlock(const float* v, size_t n, T* out) {
  for (size_t i = 0; i < n; ++i) out[i] = Io<T>::store(v[i]);
}

struct Scratch {
  float x[2048], y[2048];
};

inline uint32_t loadWord(const uint8_t* scales, size_t b) {
  uint32_t w;
  memcpy(&w, scales + 4 * b, 4);  // little-endian hosts only (x86-64, aarch64)
  return w;
}

template <typename T>
void encodeT(const Params& p, const T* in, size_t count, uint8_t* out) {
  Scratch s;
  const size_t g = static_cast<size_t>(p.block), nb = numBlocks(p, count);
  uint8_t* scales = out + codeBytes(p, count);
  for (size_t b = 0; b < nb; ++b) {
    const size_t n = count - b * g < g ? count - b * g : g;
    loadBlock(in + b * g, n, s.x, p.block);
    const uint32_t w = encodeBlock(p, s.x, b, out + b * (g / 2), s.y);
    memcpy(scales + 4 * b, &w, 4);
  }
}

template <typename T>
void decodeT(const Params& p, const uint8_t* in, size_t count, T* out) {
  Scratch s;
  const size_t g = static_cast<size_t>(p.block), nb = numBlocks(p, count);
  const uint8_t* scales = in + codeBytes(p, count);
  for (size_t b = 0; b < nb; ++b) {
    const size_t n = count - b * g < g ? count - b * g : g;
    decodeBlock(p, in + b * (g / 2), loadWord(scales, b), s.x);
    storeBlock(s.x, n, out + b * g);
  }
}

void accumulate(const Params& p, const void* const* ins, int n, size_t count, float* acc) {
  Scratch s;
  const size_t g = static_cast<size_t>(p.block), nb = numBlocks(p, count), cb = codeBytes(p, count);
  for (size_t b = 0; b < nb; ++b) {
    const size_t m = count - b * g < g ? count - b * g : g;
    for (int k = 0; k < n; ++k) {
      const uint8_t* in = static_cast<const uint8_t*>(ins[k]);
      decodeBlock(p, in + b * (g / 2), loadWord(in + cb, b), s.x);
      for (size_t i = 0; i < m; ++i) acc[b * g + i] = addAcc(acc[b * g + i], s.x[i]);
    }
  }
}

template <typename T>
void dreT(const Params& p, const void* const* ins, int np, int self, const T* selfIn, size_t count,
          float scale, uint8_t* out, T* decoded) {
  Scratch s;
  float acc[2048];
  const size_t g = static_cast<size_t>(p.block), nb = numBlocks(p, count), cb = codeBytes(p, count);
  for (size_t b = 0; b < nb; ++b) {
    const size_t m = count - b * g < g ? count - b * g : g;
    for (int r = 0; r < np; ++r) {
      if (r == self) {
        for (size_t i = 0; i < m; ++i) s.x[i] = Io<T>::load(selfIn[b * g + i]);
      } else {
        const uint8_t* in = static_cast<const uint8_t*>(ins[r]);
        decodeBlock(p, in + b * (g / 2), loadWord(in + cb, b), s.x);
      }
      for (size_t i = 0; i < m; ++i) acc[i] = r == 0 ? s.x[i] : addRn(acc[i], s.x[i]);
    }
    // The fp32 sum is encoded as it is (no rounding to T: the payload format does not depend
    // on the input type, so encode(acc as fp32) is what decode-sum-encode gives), zero padding.
    for (size_t i = 0; i < g; ++i) s.x[i] = i < m ? (scale != 1.0f ? mulRn(acc[i], scale) : acc[i]) : 0.0f;
    const uint32_t w = encodeBlock(p, s.x, b, out + b * (g / 2), s.y);
    memcpy(out + cb + 4 * b, &w, 4);
    if (decoded) {
      decodeBlock(p, out + b * (g / 2), w, s.x);
      storeBlock(s.x, m, decoded + b * g);
    }
  }
}

bool okDtype(int dt) { return dt == cocclFloat32 || dt == cocclFloat16 || dt == cocclBfloat16; }

int hEncode(const void* inst, const void* in, int dt, size_t count, void* out, void*) {
  if (!okDtype(dt)) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  uint8_t* o = static_cast<uint8_t*>(out);
  if (dt == cocclFloat32) encodeT(P(inst), static_cast<const float*>(in), count, o);
  else if (dt == cocclFloat16) encodeT(P(inst), static_cast<const Half*>(in), count, o);
  else encodeT(P(inst), static_cast<const Bf16*>(in), count, o);
  return COCCL_CODEC_OK;
}

int hDecode(const void* inst, const void* in, size_t count, int dt, void* out, void*) {
  if (!okDtype(dt)) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  const uint8_t* i = static_cast<const uint8_t*>(in);
  if (dt == cocclFloat32) decodeT(P(inst), i, count, static_cast<float*>(out));
  else if (dt == cocclFloat16) decodeT(P(inst), i, count, static_cast<Half*>(out));
  else decodeT(P(inst), i, count, static_cast<Bf16*>(out));
  return COCCL_CODEC_OK;
}

int hDecodeAccumulate(const void* inst, const void* const* ins, int n, size_t count, int dt,
                      float* acc, void*) {
  if (!okDtype(dt) || n < 1 || n > 64) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  accumulate(P(inst), ins, n, count, acc);
  return COCCL_CODEC_OK;
}

int hDecodeReduceEncode(const void* inst, const void* const* ins, int p, int self,
                        const void* selfIn, int dt, size_t count, float scale, void* out,
                        void* decoded, void*) {
  if (!okDtype(dt) || p < 1 || p > 64 || self < 0 || self >= p) return COCCL_CODEC_E_INVALID;
  if (count == 0) return COCCL_CODEC_OK;
  uint8_t* o = static_cast<uint8_t*>(out);
  if (dt == cocclFloat32)
    dreT(P(inst), ins, p, self, static_cast<const float*>(selfIn), count, scale, o, static_cast<float*>(decoded));
  else if (dt == cocclFloat16)
    dreT(P(inst), ins, p, self, static_cast<const Half*>(selfIn), count, scale, o, static_cast<Half*>(decoded));
  else
    dreT(P(inst), ins, p, self, static_cast<const Bf16*>(selfIn), count, scale, o, static_cast<Bf16*>(decoded));
  return COCCL_CODEC_OK;
}

}  // namespace
}  // namespace int4c

#ifdef COCCL_INT4_DEVICE
#define INT4_CAP_DEVICE COCCL_CODEC_CAP_DEVICE
#define INT4_DEVICE_OPS \
  { int4c::dEncode, int4c::dDecode, int4c::dDecodeAccumulate, int4c::dDecodeReduceEncode }
#else
#define INT4_CAP_DEVICE 0u
#define INT4_DEVICE_OPS \
  { nullptr, nullptr, nullptr, nullptr }
#endif

extern "C" COCCL_CODEC_PLUGIN_EXPORT const cocclCodecPlugin_v1_t cocclCodecPlugin_v1 = {
    sizeof(cocclCodecPlugin_v1_t),
    COCCL_CODEC_ABI_V1,
    "int4",
    1u,  // formatVersion
    COCCL_CODEC_DTYPE_BIT(cocclFloat32) | COCCL_CODEC_DTYPE_BIT(cocclFloat16) |
        COCCL_CODEC_DTYPE_BIT(cocclBfloat16),
    COCCL_CODEC_OP_BIT(cocclSum) | COCCL_CODEC_OP_BIT(cocclAvg),
    COCCL_CODEC_CAP_DETERMINISTIC | COCCL_CODEC_CAP_NONFINITE |
        COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE | INT4_CAP_DEVICE,
    int4c::create,
    int4c::destroy,
    int4c::canonicalSpec,
    int4c::blockElems,
    int4c::encodedBytes,
    int4c::workspaceBytes,
    int4c::errorBound,
    {int4c::hEncode, int4c::hDecode, int4c::hDecodeAccumulate, int4c::hDecodeReduceEncode},
    INT4_DEVICE_OPS,
};
