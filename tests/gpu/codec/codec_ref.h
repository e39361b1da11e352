// Shared by the device codec tests (emulated on the CPU and on the GPU): the codec variants and
// sizes under test, synthetic inputs with every kind of edge block, the host reference
// (coccl_codecs) and bitwise comparisons.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codecs/codec.h"
#include "core/dtype.h"
#include "kernels/codec_desc.h"
#include "kernels/float_convert.h"

namespace coccl {
namespace test {

inline const std::vector<std::string>& variantSpecs() {
  static const std::vector<std::string> k = {"int8:rotate=1", "int8:rotate=0", "int8:rotate=auto",
                                             "fp8_ash_ds:format=e4m3", "fp8_ash_ds:format=e5m2"};
  return k;
}

inline std::string withBlock(const std::string& spec, int g) {
  return spec + ",block=" + std::to_string(g);
}

inline const std::vector<int>& blockSizes() {
  static const std::vector<int> k = {32, 64, 128, 256, 512};
  return k;
}

inline const std::vector<cocclDataType_t>& codecTypes() {
  static const std::vector<cocclDataType_t> k = {cocclFloat32, cocclFloat16, cocclBfloat16};
  return k;
}

inline size_t typeSize(cocclDataType_t dt) { return coccl::dtypeSize(dt); }

inline const char* typeName(cocclDataType_t dt) {
  return dt == cocclFloat32 ? "fp32" : (dt == cocclFloat16 ? "fp16" : "bf16");
}

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Element i of a typed buffer as fp32 / the fp32 value stored into a typed buffer (RNE).
inline float loadAs(const std::vector<uint8_t>& b, cocclDataType_t dt, size_t i) {
  if (dt == cocclFloat32) {
    float f;
    std::memcpy(&f, &b[4 * i], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &b[2 * i], 2);
  return dt == cocclFloat16 ? kmath::fp16ToFloat(h) : kmath::bf16ToFloat(h);
}

inline std::vector<uint8_t> toTyped(const std::vector<float>& v, cocclDataType_t dt) {
  std::vector<uint8_t> b(v.size() * typeSize(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == cocclFloat32) {
      std::memcpy(&b[4 * i], &v[i], 4);
    } else {
      const uint16_t h = dt == cocclFloat16 ? kmath::floatToFp16(v[i]) : kmath::floatToBf16(v[i]);
      std::memcpy(&b[2 * i], &h, 2);
    }
  }
  return b;
}

// Synthetic input of n elements: blocks (of `g`) of scaled normals whose scale spans 1e-3..1e3,
// among them all-zero, -0.0 / +0.0, NaN, +-Inf, tiny (1e-38, subnormal), huge (1e30, 3e38)
// and mixed-magnitude blocks, by block index.
inline std::vector<float> edgeInput(size_t n, int g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(-3.0f, 3.0f);
  std::vector<float> v(n);
  const size_t gs = static_cast<size_t>(g);
  for (size_t base = 0; base < n; base += gs) {
    const size_t b = base / gs;
    const size_t end = std::min(n, base + gs);
    const float scale = std::pow(10.0f, ud(rng));
    for (size_t i = base; i < end; ++i) v[i] = nd(rng) * scale;
    const size_t pick = base + rng() % (end - base);
    switch (b % 12) {
      case 1:
        for (size_t i = base; i < end; ++i) v[i] = 0.0f;
        break;
      case 2:
        for (size_t i = base; i < end; ++i) v[i] = (i & 1) ? -0.0f : 0.0f;
        break;
      case 3:
        v[pick] = std::nanf("");
        break;
      case 4:
        v[pick] = (rng() & 1) ? INFINITY : -INFINITY;
        break;
      case 5:
        for (size_t i = base; i < end; ++i) v[i] = nd(rng) * 1e-38f;
        break;
      case 6:
        for (size_t i = base; i < end; ++i) v[i] = nd(rng) * 1e-42f;  // fp32 subnormals
        break;
      case 7:
        for (size_t i = base; i < end; ++i) v[i] = nd(rng) * 1e30f;
        break;
      case 8:
        for (size_t i = base; i < end; ++i)
          v[i] = (rng() & 1 ? 3e38f : -3e38f) * (0.5f + 0.5f * std::fabs(nd(rng)) / 4);
        break;
      case 9:
        v[pick] = 3.0e38f;
        break;
      case 10:  // bf16 subnormals and mixed scales
        for (size_t i = base; i < end; ++i)
          v[i] = (i % 3 == 0) ? bitsToFloat(0x00010000u * static_cast<uint32_t>(1 + rng() % 127))
                              : nd(rng) * 1e-3f;
        break;
      case 11:
        v[pick] = -0.0f;
        break;
      default:  // every other one mean-shifted (int8 rotate=auto takes the plain form there)
        if (b % 24 == 0)
          for (size_t i = base; i < end; ++i) v[i] += 4.0f * scale;
        break;
    }
  }
  return v;
}

// A normal-ish input without edge blocks (for the reductions' sums to stay meaningful).
inline std::vector<float> randomInput(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// ---- host reference -------------------------------------------------------------------------

inline std::vector<uint8_t> hostEncode(const Codec& c, const std::vector<uint8_t>& in,
                                       cocclDataType_t dt, size_t n) {
  std::vector<uint8_t> out(c.encodedBytes(n, dt));
  if (n > 0) c.encode(in.data(), dt, n, out.data());
  return out;
}

inline std::vector<uint8_t> hostDecode(const Codec& c, const std::vector<uint8_t>& payload,
                                       size_t n, cocclDataType_t dt) {
  std::vector<uint8_t> out(n * typeSize(dt));
  if (n > 0) c.decode(payload.data(), n, dt, out.data());
  return out;
}

// Host two-shot owner step; self = -1 (no raw input) is emulated as decode of ins[0] into fp32,
// decodeAccumulate of the others, scale, encode(fp32), decode: what the fused step equals.
inline void hostReduce(const Codec& c, const std::vector<std::vector<uint8_t>>& ins, int self,
                       const std::vector<uint8_t>& selfIn, cocclDataType_t dt, size_t n,
                       float scale, std::vector<uint8_t>* out, std::vector<uint8_t>* decoded) {
  const int p = static_cast<int>(ins.size());
  out->assign(c.encodedBytes(n, dt), 0);
  decoded->assign(n * typeSize(dt), 0);
  if (n == 0) return;
  if (self >= 0) {
    std::vector<const void*> ptrs(p);
    for (int r = 0; r < p; ++r) ptrs[r] = r == self ? nullptr : ins[r].data();
    std::vector<float> scratch(n);
    c.decodeReduceEncode(ptrs.data(), p, self, selfIn.data(), dt, n, scale, out->data(),
                         scratch.data(), decoded->data());
    return;
  }
  std::vector<float> acc(n);
  c.decode(ins[0].data(), n, cocclFloat32, acc.data());
  for (int r = 1; r < p; ++r) c.decodeAccumulate(ins[r].data(), n, dt, acc.data());
  if (scale != 1.0f)
    for (float& a : acc) a = a * scale;
  c.encode(acc.data(), cocclFloat32, n, out->data());
  c.decode(out->data(), n, dt, decoded->data());
}

// ---- comparisons --------------------------------------------------------------------------------

// Index of the first differing byte, or -1.
inline long firstDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return static_cast<long>(std::min(a.size(), b.size()));
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<long>(i);
  return -1;
}

// Typed outputs equal bit for bit, except that for fp32 any NaN equals any NaN when nanLoose
// (fp32 sums involving NaN: the host's NaN payload depends on its compiler's operand order).
inline long firstTypedDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                           cocclDataType_t dt, bool nanLoose) {
  if (a.size() != b.size()) return 0;
  const size_t n = a.size() / typeSize(dt);
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&a[i * typeSize(dt)], &b[i * typeSize(dt)], typeSize(dt)) == 0) continue;
    if (nanLoose && dt == cocclFloat32 && std::isnan(loadAs(a, dt, i)) &&
        std::isnan(loadAs(b, dt, i)))
      continue;
    return static_cast<long>(i);
  }
  return -1;
}

inline std::string describeDiff(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                                long i, size_t n, int g) {
  if (i < 0) return "";
  const size_t codes = (n + g - 1) / g * g;
  char buf[160];
  if (static_cast<size_t>(i) < codes)
    std::snprintf(buf, sizeof(buf), "byte %ld (block %zu, code %zu): got 0x%02x want 0x%02x", i,
                  static_cast<size_t>(i) / g, static_cast<size_t>(i) % g, got[i], want[i]);
  else
    std::snprintf(buf, sizeof(buf), "byte %ld (scale word of block %zu): got 0x%02x want 0x%02x", i,
                  (static_cast<size_t>(i) - codes) / 4, got[i], want[i]);
  return buf;
}

}  // namespace test
}  // namespace coccl
