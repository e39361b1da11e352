// The "fp8_ash_ds" codec: Adaptive Scale-Hadamard transform + Dual-Scale FP8 quantization
// (TACO, arXiv 2604.24088), with both scales folded into one fp32 word per block.
// Spec: fp8_ash_ds[:block=32|64|128|256|512 (128), format=e4m3|e5m2 (e4m3),
//                  lambda=L (1e-6), alpha_min=A (0.001), alpha_max=B (1000), rotate=0|1 (1)].
// rotate=0 is TACO's ablation without the Hadamard transform (plain per-block absmax FP8 after
// the power-of-two alpha; same payload layout; e4m3 only); alpha_min=alpha_max=1
// is the ablation without the adaptive scale.
//
// Payload (nb = ceil(count/G)): nb*G FP8 codes (block-major, input order in a block, partial
// last block zero-padded and all G transform coefficients kept), then nb little-endian fp32
// scale words; encodedBytes = nb*(G+4) (codecGeometry: 8-bit codes, 4 metadata bytes a block).
// Block math, the scale word and the RAW (non-finite / all-zero / tiny) mode are in
// ash_block.h (this folder) and src/kernels/block_scale.h; the device tiles in tile_ash.cuh.
//
// elementErrorBound (one encode/decode, finite input, any output type): with u = y * inv the
// scaled coefficients, FP8 rounding gives |q_j - u_j| <= eps |u_j| + d (eps = 2^-4 E4M3,
// 2^-3 E5M2: half an ulp of a 3/2-bit mantissa; d = half the subnormal step, 2^-10 / 2^-17).
// Mapped back by H and c = s / (G alpha) (s * inv = 1), the element error is at most
//   eps * ||x||_2 + d * max_j |(H x)_j| / Qmax <= rms * (eps * sqrt(G) + d * G / Qmax)
// (||H e||_inf <= ||e||_1 <= sqrt(G) ||e||_2, max |(H x)_j| <= sqrt(G) ||x||_2 = G rms).
// RAW blocks stay below it (eps * absmax + d * absmax / R). Added: fp32 arithmetic (2^-18
// relative to sqrt(G) rms), rounding to a 16-bit output type (2^-8 of the value) and 2^-120
// absolute for subnormal-range blocks.
#include <cmath>
#include <string>

#include "codecs/block_codec.h"
#include "codecs/codec_factories.h"
#include "codecs/fp8_ash_ds/ash_block.h"

namespace coccl {
namespace codec_detail {

namespace {

// fp8 -> fp32 lookup table holding exactly fp8ToFloat's values.
template <class F>
const float* fp8Table() {
  static const struct Table {
    float v[256];
    Table() {
      for (int c = 0; c < 256; ++c) v[c] = kmath::fp8ToFloat<F>(static_cast<uint8_t>(c));
    }
  } table;
  return table.v;
}

struct TableDequant {
  const float* t;
  COCCL_BLOCK_INLINE float operator()(uint8_t c) const { return t[c]; }
};

template <class F, bool R>
struct AshKernel {
  using Code = uint8_t;
  static constexpr CodecKind kKind = CodecKind::Fp8AshDs;
  static constexpr const char* kName = "fp8_ash_ds";
  static constexpr uint32_t kId = kCodecIdFp8AshDs;
  static constexpr uint32_t kFormatVersion = 1;

  kmath::AshParams params;
  const float* table = fp8Table<F>();

  template <int G>
  COCCL_BLOCK_INLINE uint32_t encode(const float* x, float* y, uint8_t* codes) const {
    return kmath::ashEncodeBlock<G, F, R>(x, y, codes, params);
  }

  template <int G>
  COCCL_BLOCK_INLINE void decode(const uint8_t* codes, uint32_t word, float* out) const {
    kmath::ashDecodeBlock<G, F, TableDequant, R>(codes, word, out, TableDequant{table});
  }

  // the owner step in the rotated domain (ash_block.h), for the types it is on for
  static constexpr bool kRotatedReduce = R;
  static constexpr bool rotatedReduceFor(int typeBytes) {
    return kmath::ashRotatedReduceFor(typeBytes);
  }

  template <int G>
  COCCL_BLOCK_INLINE bool decodeRotated(const uint8_t* codes, uint32_t word, float* out) const {
    return kmath::ashDecodeRotatedBlock<G, F>(codes, word, out, TableDequant{table});
  }

  template <int G>
  COCCL_BLOCK_INLINE void rotate(float* v) const {
    kmath::fwht<G>(v);
  }

  template <int G>
  COCCL_BLOCK_INLINE bool encodeRotated(const float* w, uint8_t* codes, uint32_t* word) const {
    return kmath::ashEncodeRotatedBlock<G, F>(w, codes, word, params);
  }

  double errorBound(size_t g, double rms, double absmax) const {
    const double G = static_cast<double>(g);
    const bool e4m3 = F::kMantBits == 3;
    const double eps = e4m3 ? 0x1p-4 : 0x1p-3;
    const double d = e4m3 ? 0x1p-10 : 0x1p-17;
    // rotate=0: |x_i - x'_i| <= eps |x_i| + d * absmax / Qmax (c = absmax / (Qmax alpha))
    double core = R ? rms * (std::sqrt(G) * (eps + 0x1p-18) + d * G / F::kMax)
                    : absmax * (eps + 0x1p-18 + d / F::kMax);
    return core + 0x1p-8 * (absmax + core) + 0x1p-120;
  }

  CodecDesc desc(size_t g) const {
    CodecDesc d;
    d.kind = kKind;
    d.block = static_cast<int32_t>(g);
    d.fp8E5M2 = F::kMantBits == 2 ? 1 : 0;
    d.lambda = params.lambda;
    d.alphaMin = params.alphaMin;
    d.alphaMax = params.alphaMax;
    if (!R) d.rotate = 0;  // the device tiles' plain family (tile_ash.cuh); else the default
    return d;
  }
};

template <class F, bool R>
CodecPtr build(long block, const kmath::AshParams& p, const std::string& canon) {
  AshKernel<F, R> k;
  k.params = p;
  return std::make_shared<BlockCodec<AshKernel<F, R>>>(k, static_cast<size_t>(block), canon);
}

}  // namespace

CodecPtr makeFp8AshDsCodec(const ParsedSpec& spec) {
  SpecReader reader(spec);
  long block = reader.getIntOneOf("block", 128, blockSizes());
  std::string format = reader.getWord("format", "e4m3", {"e4m3", "e5m2"});
  kmath::AshParams p;
  // alpha stays a normal power of two (2^-64 .. 2^64) so 1/alpha and alpha * x are exact
  p.lambda = reader.getFloat("lambda", 1e-6f, 0.0, 1e30);
  p.alphaMin = reader.getFloat("alpha_min", 1e-3f, 0x1p-64, 0x1p64);
  p.alphaMax = reader.getFloat("alpha_max", 1e3f, 0x1p-64, 0x1p64);
  const bool rotate = reader.getWord("rotate", "1", {"0", "1"}) == "1";
  reader.finish("block, format, lambda, alpha_min, alpha_max, rotate");
  if (!rotate && format != "e4m3")
    COCCL_THROW(cocclInvalidArgument, "codec spec '%s': rotate=0 (the ablation) is for e4m3 only",
                quoted(spec.text).c_str());
  if (!(p.alphaMin <= p.alphaMax))
    COCCL_THROW(cocclInvalidArgument, "codec spec '%s': alpha_min must be <= alpha_max",
                quoted(spec.text).c_str());
  std::string canon = "fp8_ash_ds:block=" + std::to_string(block) + ",format=" + format +
                      ",lambda=" + formatFloat(p.lambda) + ",alpha_min=" + formatFloat(p.alphaMin) +
                      ",alpha_max=" + formatFloat(p.alphaMax) + (rotate ? "" : ",rotate=0");
  if (format == "e5m2")
    return build<kmath::Fp8E5M2, true>(block, p, canon);
  return rotate ? build<kmath::Fp8E4M3, true>(block, p, canon)
                : build<kmath::Fp8E4M3, false>(block, p, canon);
}

}  // namespace codec_detail
}  // namespace coccl
