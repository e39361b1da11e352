// Walsh-Hadamard butterfly and block energy with a fixed fp32 evaluation order.
//
// fwht<G>(v): v <- H_G v with H_G the UNNORMALIZED Sylvester-order Hadamard matrix (+-1
// entries, H_G H_G = G I). Stages run over index bit 0, 1, ..., log2(G)-1 in that order; at the
// stage of bit b, for every i with bit b clear: (a, c) = (v[i], v[i|b]) -> v[i] = a + c,
// v[i|b] = a - c (one fp32 add / subtract each, round-to-nearest-even). Within a stage the
// pairs are independent, so any schedule that keeps the stage order (a thread doing the low
// stages on its contiguous run, then __shfl_xor_sync across lanes for the high bits) gives the
// same bits.
//
// blockEnergy<G>(x): sum of x_i^2 as a full pairwise tree over the index bits from lowest to
// highest: level 0 p_i = x_{2i}*x_{2i} + x_{2i+1}*x_{2i+1} (two rounded products, one rounded
// sum, never fused), then p'_i = p_{2i} + p_{2i+1}, ... until one value remains.
#pragma once

#include "kernels/host_device.h"

namespace coccl {
namespace kmath {

// Stages H and 2H in one pass (radix 4): the same operations in the same order per element as
// two radix-2 passes, with half the loads and stores.
template <int G, int H>
COCCL_HD void fwhtRadix4(float* v) {
  for (int j = 0; j < G; j += 4 * H) {
    float* p = v + j;
    for (int k = 0; k < H; ++k) {
      float a0 = p[k], a1 = p[k + H], a2 = p[k + 2 * H], a3 = p[k + 3 * H];
      float b0 = addRn(a0, a1), b1 = subRn(a0, a1);  // stage H
      float b2 = addRn(a2, a3), b3 = subRn(a2, a3);
      p[k] = addRn(b0, b2);  // stage 2H
      p[k + 2 * H] = subRn(b0, b2);
      p[k + H] = addRn(b1, b3);
      p[k + 3 * H] = subRn(b1, b3);
    }
  }
}

template <int G, int H>
COCCL_HD void fwhtRadix2(float* v) {
  for (int j = 0; j < G; j += 2 * H) {
    float* p = v + j;
    for (int k = 0; k < H; ++k) {
      float a = p[k], c = p[k + H];
      p[k] = addRn(a, c);
      p[k + H] = subRn(a, c);
    }
  }
}

// Stages H, 2H, ... G/2, two at a time.
template <int G, int H>
COCCL_HD void fwhtFrom(float* v) {
  if constexpr (4 * H <= G) {
    fwhtRadix4<G, H>(v);
    fwhtFrom<G, 4 * H>(v);
  } else if constexpr (2 * H <= G) {
    fwhtRadix2<G, H>(v);
  }
}

template <int G>
COCCL_HD void fwht(float* v) {
  static_assert(G >= 2 && (G & (G - 1)) == 0, "G must be a power of two");
  fwhtFrom<G, 1>(v);
}

// One level of the pairwise tree per instantiation (sizes known at compile time, no copies).
template <int N>
COCCL_HD float pairwiseSum(const float* t) {
  if constexpr (N == 1) {
    return t[0];
  } else {
    float u[N / 2];
    for (int i = 0; i < N / 2; ++i) u[i] = addRn(t[2 * i], t[2 * i + 1]);
    return pairwiseSum<N / 2>(u);
  }
}

template <int G>
COCCL_HD float blockEnergy(const float* x) {
  static_assert(G >= 2 && (G & (G - 1)) == 0, "G must be a power of two");
  float t[G / 2];
  for (int i = 0; i < G / 2; ++i) {
    float p = mulRn(x[2 * i], x[2 * i]);
    float q = mulRn(x[2 * i + 1], x[2 * i + 1]);
    t[i] = addRn(p, q);
  }
  return pairwiseSum<G / 2>(t);
}

}  // namespace kmath
}  // namespace coccl
