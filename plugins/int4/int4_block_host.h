// int4 codec: one block on the host (loops over the math of int4_math.h, written so that the
// compiler vectorises them). The device kernels (int4_device.cu) distribute the same operations
// over a warp; the results are equal bit for bit because every fp32 operation and its operands
// are the same.
#pragma once

#include <string.h>

#include "int4_math.h"
#include "int4_params.h"

namespace int4c {
namespace {  // internal linkage: one copy per build of the host operations (int4_math.h)

// v <- H_S v on each S-element sub-block of v[0, g) (stages over bit 0, 1, ...). Within a
// stage the pairs (i, i + h) are independent, so visiting them run by run (contiguous j, which
// the compiler vectorises) gives the same bits as any other order.
inline void fwhtSub(float* v, int g, int s) {
  // h = 1, 2, 4 on each run of 8 (S >= 32), written out so that the compiler keeps the 8 values
  // in registers (shuffles) instead of strided loads
  for (int i = 0; i < g; i += 8) {
    float* w = v + i;
    const float a0 = addRn(w[0], w[1]), a1 = subRn(w[0], w[1]), a2 = addRn(w[2], w[3]),
                a3 = subRn(w[2], w[3]), a4 = addRn(w[4], w[5]), a5 = subRn(w[4], w[5]),
                a6 = addRn(w[6], w[7]), a7 = subRn(w[6], w[7]);
    const float b0 = addRn(a0, a2), b2 = subRn(a0, a2), b1 = addRn(a1, a3), b3 = subRn(a1, a3),
                b4 = addRn(a4, a6), b6 = subRn(a4, a6), b5 = addRn(a5, a7), b7 = subRn(a5, a7);
    w[0] = addRn(b0, b4);
    w[4] = subRn(b0, b4);
    w[1] = addRn(b1, b5);
    w[5] = subRn(b1, b5);
    w[2] = addRn(b2, b6);
    w[6] = subRn(b2, b6);
    w[3] = addRn(b3, b7);
    w[7] = subRn(b3, b7);
  }
  for (int base = 0; base < g; base += s) {
    float* w = v + base;
    for (int h = 8; h < s; h <<= 1)
      for (int i0 = 0; i0 < s; i0 += 2 * h) {
        float* lo = w + i0;
        float* hi = lo + h;
        for (int j = 0; j < h; ++j) {
          const float a = lo[j], c = hi[j];
          lo[j] = addRn(a, c);
          hi[j] = subRn(a, c);
        }
      }
  }
}

inline uint32_t absBits(float f) { return fbits(f) & 0x7fffffffu; }

// Encodes x[0, G) (already padded) of block index `blk` into codes[0, G/2) and returns its word.
// y: scratch of G floats.
inline uint32_t encodeBlock(const Params& p, const float* x, size_t blk, uint8_t* codes, float* y) {
  const int g = p.block, s = subBlock(p);
  // The largest |x| bits, and the largest finite |x|: for non-negative floats the bit order is
  // the value order, so integer maxima (vectorised) give the same values.
  uint32_t amax = 0, fbitsMax = 0, nz = 0;  // nz: elements that are not +-0 (auto's rule)
  for (int i = 0; i < g; ++i) {
    const uint32_t a = absBits(x[i]);
    amax = a > amax ? a : amax;
    fbitsMax = (a < 0x7f800000u && a > fbitsMax) ? a : fbitsMax;
    nz += a != 0u ? 1u : 0u;
  }
  const float fmax = bitsf(fbitsMax);
  float m = 0.0f;
  const bool mayRotate = p.mode != kModePlain && amax < 0x7f800000u;
  if (mayRotate) {
    memcpy(y, x, sizeof(float) * static_cast<size_t>(g));
    fwhtSub(y, g, s);
    uint32_t mb = 0;
    for (int i = 0; i < g; ++i) mb = absBits(y[i]) > mb ? absBits(y[i]) : mb;
    m = bitsf(mb);
  }
  BlockPlan plan = planBlock(amax, fmax, m, p.mode, s);
  if (p.mode == kModeAuto && plan.rotated && !autoRotates(m, bitsf(amax), nz, g, s))
    plan = planBlock(amax, fmax, m, kModePlain, s);
  if (plan.raw) {
    for (int j = 0; j < g; j += 2)
      codes[j / 2] = packPair(rawCode(x[j], plan.inv), rawCode(x[j + 1], plan.inv));
    return plan.word;
  }
  const float* v = plan.rotated ? y : x;
  if (!p.stochastic) {  // rneCode per element, pairs at a time (vectorised)
    for (int k = 0; k < g / 2; ++k)
      codes[k] = packPair(rneCode(v[2 * k], plan.inv), rneCode(v[2 * k + 1], plan.inv));
    return plan.word;
  }
  uint32_t bh = 0;
  if (p.stochastic)
    for (int j = 0; j < g; ++j) bh ^= elemHashTerm(fbits(x[j]), static_cast<uint32_t>(j));
  const uint64_t e0 = static_cast<uint64_t>(blk) * static_cast<uint64_t>(g);
  int32_t q[2];
  for (int j = 0; j < g; ++j) {
    const uint32_t h = p.stochastic ? int4Hash(p.seed, e0 + static_cast<uint64_t>(j), bh) : 0u;
    q[j & 1] = quant(mulRn(v[j], plan.inv), p.stochastic, h);
    if (j & 1) codes[j / 2] = packPair(q[0], q[1]);
  }
  return plan.word;
}

// Decodes one block into out[0, G) (fp32).
inline void decodeBlock(const Params& p, const uint8_t* codes, uint32_t word, float* out) {
  const int g = p.block;
  if (word & kRawBit) {
    const float r = bitsf(word & 0x7fffffffu);
    for (int j = 0; j < g; ++j) out[j] = rawDecode(nibble(codes[j / 2], j & 1), r);
    return;
  }
  const float c = bitsf(word);
  for (int j = 0; j < g; ++j) out[j] = static_cast<float>(nibble(codes[j / 2], j & 1));
  if ((word & kPlainFlag) == 0u) fwhtSub(out, g, subBlock(p));
  for (int j = 0; j < g; ++j) out[j] = mulRn(out[j], c);
}

}  // namespace
}  // namespace int4c
