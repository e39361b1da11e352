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
//     sqrt(G) rms) / 7. rotate=auto rotates a block only when m^2 G <= absmax^2 nz S
//     (int4_math.h's autoRotates; nz <= G), and the transform H_S / sqrt(S) is orthonormal, so
//     there |err_i| <= ||err||_2 <= sqrt(G) emax m / (7 sqrt(S)) <= sqrt(G) absmax / 14 with
//     rne as well (+1% for the fp32 comparison); the smaller of the two.
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
#include "int4_host_ops.h"
#include "int4_math.h"

#ifdef COCCL_INT4_DEVICE
#include "int4_device.h"
#endif

namespace int4c {
namespace {

const Instance& I(const void* inst) { return *static_cast<const Instance*>(inst); }
const Params& P(const void* inst) { return I(inst).p; }

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
  char isaErr[160] = {0};
  const HostOps* host = selectHostOps(getenv("COCCL_INT4_HOST_ISA"), isaErr, sizeof isaErr);
  if (!host) return fail(err, errLen, isaErr);
  Instance* inst = new (std::nothrow) Instance{p, host};
  if (!inst) return fail(err, errLen, "int4: out of memory");
  *instance = inst;
  return COCCL_CODEC_OK;
}

void destroy(void* instance) { delete static_cast<Instance*>(instance); }

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
  const double G = p.block, S = subBlock(p), emax = p.stochastic ? 1.0 : 0.5;
  const double plain = emax * absmax / 7.0;
  const double rotated = emax * sqrt(S) * fmin(sqrt(S) * absmax, sqrt(G) * rms) / 7.0;
  // auto with rne: a rotated block's total error is at most sqrt(G) absmax / 14 (1% for the
  // fp32 comparison; see the header); with stochastic rounding only the rotated bound is used.
  const double autoRot = p.stochastic ? rotated : fmin(rotated, 1.01 * sqrt(G) * absmax / 14.0);
  double core = p.mode == kModePlain ? plain
                : p.mode == kModeRotated ? fmax(plain, rotated)
                                         : fmax(plain, autoRot);
  core = fmax(core, absmax / 12.0) + absmax * S * 0x1p-16 + 0x1p-96;
  return core + 0x1p-8 * (absmax + core);
}

bool okDtype(int dt) { return dt == cocclFloat32 || dt == cocclFloat16 || dt == cocclBfloat16; }

int hEncode(const void* inst, const void* in, int dt, size_t count, void* out, void*) {
  if (!okDtype(dt)) return COCCL_CODEC_E_INVALID;
  if (count) I(inst).host->encode(P(inst), in, dt, count, out);
  return COCCL_CODEC_OK;
}

int hDecode(const void* inst, const void* in, size_t count, int dt, void* out, void*) {
  if (!okDtype(dt)) return COCCL_CODEC_E_INVALID;
  if (count) I(inst).host->decode(P(inst), in, count, dt, out);
  return COCCL_CODEC_OK;
}

int hDecodeAccumulate(const void* inst, const void* const* ins, int n, size_t count, int dt,
                      float* acc, void*) {
  if (!okDtype(dt) || n < 1 || n > 64) return COCCL_CODEC_E_INVALID;
  if (count) I(inst).host->decodeAccumulate(P(inst), ins, n, count, acc);
  return COCCL_CODEC_OK;
}

int hDecodeReduceEncode(const void* inst, const void* const* ins, int p, int self,
                        const void* selfIn, int dt, size_t count, float scale, void* out,
                        void* decoded, void*) {
  if (!okDtype(dt) || p < 1 || p > 64 || self < 0 || self >= p) return COCCL_CODEC_E_INVALID;
  if (count)
    I(inst).host->decodeReduceEncode(P(inst), ins, p, self, selfIn, dt, count, scale, out, decoded);
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
    3u,  // formatVersion (3: auto by the estimated errors; 2: rne of the exact product; int4_math.h)
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
