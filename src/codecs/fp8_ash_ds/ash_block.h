// One block of the fp8_ash_ds codec (Adaptive Scale-Hadamard transform + Dual-Scale FP8
// quantization, TACO arXiv 2604.24088), as scalar code with a fixed fp32 evaluation order.
//
// Encode of a block x[0, G) (partial blocks zero-padded by the caller):
//   1. any NaN/Inf, or every element +-0 -> RAW (below).
//   2. E = blockEnergy<G>(x); alpha = adaptiveAlpha<G>(E, Qmax, lambda, alphaMin, alphaMax).
//   3. y = fwht<G>(alpha * x)                 (one fp32 multiply per element, exact).
//   4. m = max |y_j|; inv = Qmax / m; q_j = floatToFp8Sat(y_j * inv)   (one fp32 multiply).
//   5. c = ((m / Qmax) * (1/G)) * (1/alpha); if not scalesUsable(m, inv, c) -> RAW.
//   The scale word is c (sign bit clear).
// Decode: z = fwht<G>(fp8ToFloat(q)); x_i = z_i * c.
//
// RAW (scale word = -r, sign bit set): r = rawScale(absmax over finite x, R) with R = 240 for
// E4M3, 28672 for E5M2 (code 0x77 in both formats, so 0x78..0x7F / 0xF8..0xFF are free):
//   finite x, r > 0 -> floatToFp8Sat(x / r), magnitude clamped to 0x77;
//   finite x, r = 0 -> 0x00 / 0x80 by the sign of x (so +-0 round-trip exactly);
//   +Inf -> 0x7C, -Inf -> 0xFC, NaN -> 0x7F.
//   Decode: 0x7C -> +Inf, 0xFC -> -Inf, 0x7F/0xFF -> NaN, else fp8ToFloat(code) * r.
#pragma once

#include "kernels/block_scale.h"
#include "kernels/fp8.h"
#include "kernels/hadamard.h"

namespace coccl {
namespace kmath {

// Parameters of fp8_ash_ds that enter the math (the format is the template argument F).
struct AshParams {
  float lambda = 1e-6f;
  float alphaMin = 1e-3f;
  float alphaMax = 1e3f;
};

template <class F>
struct AshFormat {
  static constexpr float kQmax = F::kMax;
  static constexpr float kRawR = F::kMantBits == 3 ? 240.0f : 28672.0f;
  static constexpr uint8_t kRawMaxCode = 0x77;
  static constexpr uint8_t kPosInf = 0x7c, kNegInf = 0xfc, kNan = 0x7f;
};

// RAW encode of one block; returns the scale word.
template <int G, class F>
COCCL_HD uint32_t ashEncodeRaw(const float* x, uint8_t* codes) {
  using Fmt = AshFormat<F>;
  float r = rawScale(bitsFloat(maxAbsBits<G, true>(x)), Fmt::kRawR);
  for (int i = 0; i < G; ++i) {
    uint32_t u = floatBits(x[i]);
    uint32_t a = u & 0x7fffffffu;
    uint8_t code;
    if (a > 0x7f800000u) {
      code = Fmt::kNan;
    } else if (a == 0x7f800000u) {
      code = (u >> 31) ? Fmt::kNegInf : Fmt::kPosInf;
    } else if (r == 0.0f) {
      code = static_cast<uint8_t>((u >> 24) & 0x80u);
    } else {
      uint8_t c = floatToFp8Sat<F>(divRn(x[i], r));
      uint8_t mag = static_cast<uint8_t>(c & 0x7fu);
      code = static_cast<uint8_t>((c & 0x80u) | (mag > Fmt::kRawMaxCode ? Fmt::kRawMaxCode : mag));
    }
    codes[i] = code;
  }
  return rawWord(r);
}

// Encode of one block of G fp32 values. `y` is scratch of G floats. Returns the scale word.
// R = false is the ablation without the Hadamard transform (spec rotate=0: plain per-block
// absmax E4M3 after the power-of-two alpha, TACO's "w/o Hadamard"): y = alpha x,
// c = (m / Qmax) * 1 * (1/alpha), decode x_i = fp8(q_i) * c.
template <int G, class F, bool R = true>
COCCL_HD uint32_t ashEncodeBlock(const float* x, float* y, uint8_t* codes, const AshParams& p) {
  using Fmt = AshFormat<F>;
  uint32_t amax = maxAbsBits<G>(x);
  if (amax == 0u || !isFiniteBits(amax)) return ashEncodeRaw<G, F>(x, codes);

  float alpha = adaptiveAlpha<G>(blockEnergy<G>(x), Fmt::kQmax, p.lambda, p.alphaMin, p.alphaMax);
  for (int i = 0; i < G; ++i) y[i] = mulRn(alpha, x[i]);
  if (R) fwht<G>(y);
  float m = bitsFloat(maxAbsBits<G>(y));
  float inv = divRn(Fmt::kQmax, m);
  float c = decodeMultiplier(m, Fmt::kQmax, R ? 1.0f / static_cast<float>(G) : 1.0f,
                             divRn(1.0f, alpha));
  if (!scalesUsable(m, inv, c)) return ashEncodeRaw<G, F>(x, codes);
  for (int i = 0; i < G; ++i) codes[i] = floatToFp8SatNonNan<F>(mulRn(y[i], inv));
  return floatBits(c);
}

// Dequantizer of one code (host code may pass a lookup table with the same values).
template <class F>
struct Fp8Dequant {
  COCCL_HD float operator()(uint8_t c) const { return fp8ToFloat<F>(c); }
};

// RAW decode of one element.
template <class F>
COCCL_HD float ashDecodeRawElem(uint8_t code, float r) {
  using Fmt = AshFormat<F>;
  if (code == Fmt::kPosInf) return bitsFloat(0x7f800000u);
  if (code == Fmt::kNegInf) return bitsFloat(0xff800000u);
  if ((code & 0x7fu) == Fmt::kNan) return bitsFloat(0x7fc00000u);
  return mulRn(fp8ToFloat<F>(code), r);
}

// Decode of one block into out[0, G) (fp32); R as ashEncodeBlock's.
template <int G, class F, class Deq = Fp8Dequant<F>, bool R = true>
COCCL_HD void ashDecodeBlock(const uint8_t* codes, uint32_t word, float* out, Deq deq = Deq()) {
  if (isRawWord(word)) {
    float r = rawScaleFromWord(word);
    for (int i = 0; i < G; ++i) out[i] = ashDecodeRawElem<F>(codes[i], r);
    return;
  }
  float c = bitsFloat(word);
  for (int i = 0; i < G; ++i) out[i] = deq(codes[i]);
  if (R) fwht<G>(out);
  for (int i = 0; i < G; ++i) out[i] = mulRn(out[i], c);
}

// ---- the two-shot owner step in the rotated domain ------------------------------------------
//
// The decoder is linear, decode(q, c) = c * H q (H unnormalized, H H = G I), so the owner's sum
// of a block, S = x_self + sum_r c_r H q_r, has the transform
//   H S = H x_self + sum_r (G c_r) q_r,
// and encode(S) needs S only through H S: its energy is ||H S||^2 / G and its coefficients are
// y = H(alpha S) = alpha (H S). The owner therefore transforms its own input once and, after
// encoding, the output once: 2 transforms an element instead of p + 1 (device-performance
// notes, "decodeReduceEncode is ALU-bound"). This fixes the floating-point order of the fused
// step (block_driver.h, decodeReduceEncodeBlocks), on the host and on the device alike:
//   term_self = fwht(x_self); term_r = ashDecodeRotatedBlock(q_r, c_r);
//   w = term_0 + term_1 + ... (rank order, first assigned); w *= scale if scale != 1;
//   ashEncodeRotatedBlock(w).
// A block takes the linear order (the sum of decoded blocks, then ashEncodeBlock) instead when
// it is the partial last block of a chunk (its zero padding must be restored in the linear
// domain), when a peer's block is RAW other than the zero block (non-finite or tiny input;
// the zero block's term is +0), when w holds a NaN
// or Inf (non-finite own input, or a transform that overflowed) or when its scales are
// unusable (the RAW encode needs S).

// The types whose owner step takes the rotated order: the 2-byte types (bf16, fp16), and fp32
// in a build with COCCL_ROTATED_REDUCE_FP32=1 (off: the fp32 kernel measured slower with it
// before its register use was cut; perf/RESULTS.md). Host and device read the same switch.
#ifndef COCCL_ROTATED_REDUCE_FP32
#define COCCL_ROTATED_REDUCE_FP32 0
#endif
COCCL_HD_CONSTEXPR bool ashRotatedReduceFor(int typeBytes) {
  return typeBytes == 2 || (COCCL_ROTATED_REDUCE_FP32 != 0 && typeBytes == 4);
}

// Whether a RAW block is the zero block: scale word of r = 0 and every code +-0 (a block with
// NaN or Inf beside zeros also has r = 0, but codes of its own for those).
template <int G>
COCCL_HD bool ashIsZeroRawBlock(const uint8_t* codes, uint32_t word) {
  if (word != rawWord(0.0f)) return false;
  uint32_t any = 0;
  for (int i = 0; i < G; ++i) any |= codes[i] & 0x7fu;
  return any == 0;
}

// term_r of a peer block: H(decode(codes, word)) = fp8ToFloat(q_i) * (G c) for a transform
// block (G c exact: c is a normal fp32 and G a power of two), +0 everywhere for the zero RAW
// block (all-zero input: H 0 = 0; zeros are common in nccl-tests' -c 0 buffers and in sparse
// gradients, and the linear order costs p + 1 transforms); returns false (out untouched) for
// any other RAW block, whose owner step then takes the linear order.
template <int G, class F, class Deq = Fp8Dequant<F>>
COCCL_HD bool ashDecodeRotatedBlock(const uint8_t* codes, uint32_t word, float* out,
                                    Deq deq = Deq()) {
  if (isRawWord(word)) {
    if (!ashIsZeroRawBlock<G>(codes, word)) return false;
    for (int i = 0; i < G; ++i) out[i] = 0.0f;
    return true;
  }
  const float gc = mulRn(bitsFloat(word), static_cast<float>(G));
  for (int i = 0; i < G; ++i) out[i] = mulRn(deq(codes[i]), gc);
  return true;
}

// Encode of a block S given only w = H S. Returns false (codes and *word untouched) when the
// block must take the linear order: w not finite, or scales unusable. w all +-0 is the RAW
// zero block (codes 0x00, scale word -0.0). Otherwise, in this order:
//   E = blockEnergy<G>(w) * (1/G); alpha = adaptiveAlpha<G>(E, ...); m = alpha * max |w|;
//   inv = Qmax / m; c = decodeMultiplier(m, Qmax, 1/G, 1/alpha); q_i = fp8(alpha * w_i * inv)
// (each product rounded; alpha * max |w| == max |alpha * w_i| as rounding is monotone).
template <int G, class F>
COCCL_HD bool ashEncodeRotatedBlock(const float* w, uint8_t* codes, uint32_t* word,
                                    const AshParams& p) {
  using Fmt = AshFormat<F>;
  const uint32_t amax = maxAbsBits<G>(w);
  if (!isFiniteBits(amax)) return false;
  if (amax == 0u) {
    for (int i = 0; i < G; ++i) codes[i] = 0;
    *word = rawWord(0.0f);
    return true;
  }
  const float invG = 1.0f / static_cast<float>(G);
  const float energy = mulRn(blockEnergy<G>(w), invG);
  const float alpha = adaptiveAlpha<G>(energy, Fmt::kQmax, p.lambda, p.alphaMin, p.alphaMax);
  const float m = mulRn(alpha, bitsFloat(amax));
  const float inv = divRn(Fmt::kQmax, m);
  const float c = decodeMultiplier(m, Fmt::kQmax, invG, divRn(1.0f, alpha));
  if (!scalesUsable(m, inv, c)) return false;
  for (int i = 0; i < G; ++i) codes[i] = floatToFp8SatNonNan<F>(mulRn(mulRn(alpha, w[i]), inv));
  *word = floatBits(c);
  return true;
}

}  // namespace kmath
}  // namespace coccl
