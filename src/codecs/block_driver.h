// Host loops of the blocked codecs: walk a payload block by block with fixed-size local arrays
// (templated on the block size G and the element type), calling a block kernel K that wraps
// the codec's scalar block math (src/codecs/<codec>/*_block.h). No allocation, no virtual call
// per element.
//
// Payload of `count` elements: the codec's PayloadGeometry (kernels/payload_geometry.h,
// codecGeometry(K::kKind, G)); for the byte-code codecs these loops serve (one Code per
// element, one 4-byte scale word per block) with nb = ceil(count / G) blocks:
//   bytes [0, nb*G)          one-byte codes, block-major, input order inside a block
//                            (a partial last block keeps all G codes; its input is zero-padded)
//   bytes [nb*G, nb*(G+4))   nb little-endian fp32 scale words (4-byte aligned: G % 4 == 0)
//
// A kernel K provides:
//   static constexpr CodecKind kKind;  (its line of the codec list: the payload geometry)
//   using Code = uint8_t or int8_t;
//   template <int G> uint32_t encode(const float* x, float* scratch, Code* codes) const;
//   template <int G> void decode(const Code* codes, uint32_t word, float* out) const;
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "codecs/dtype_io.h"
#include "kernels/codec_desc.h"

namespace coccl {
namespace codec_detail {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "payload scale words are little-endian");

// The block loops are cloned for AVX2 and baseline x86-64 and picked at load time. The clones
// compute bitwise-identical results: all math is element-wise IEEE fp32 (no FMA contraction,
// no reassociation) or integer, so vector width does not change a single bit.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__) && !defined(COCCL_NO_CLONES)
#define COCCL_HOST_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define COCCL_HOST_CLONES
#endif
// Block kernels' encode/decode are inlined into the (cloned) loops.
#if defined(__GNUC__)
#define COCCL_BLOCK_INLINE inline __attribute__((always_inline))
#else
#define COCCL_BLOCK_INLINE inline
#endif

inline uint32_t loadWord(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

inline void storeWord(uint8_t* p, uint32_t w) {
  std::memcpy(p, &w, 4);
}

// The payload geometry of K's codec for blocks of G, checked against what the loops below
// are written for: one Code a element, one 4-byte scale word a block.
template <class K, int G>
constexpr PayloadGeometry blockGeometry() {
  constexpr PayloadGeometry geo = codecGeometry(K::kKind, G);
  static_assert(geo.valid() && geo.codeBits == 8 * sizeof(typename K::Code) && geo.metaBytes == 4,
                "the host block loops handle byte codes and one 4-byte word a block");
  return geo;
}

// Loads elements [base, base+n) of src into x[0, G), zero-padding past n.
template <int G, cocclDataType_t DT>
inline void loadBlock(const typename FloatIO<DT>::T* src, size_t n, float* x) {
  if (n == static_cast<size_t>(G)) {
    for (int i = 0; i < G; ++i) x[i] = FloatIO<DT>::toF(src[i]);
  } else {
    for (size_t i = 0; i < n; ++i) x[i] = FloatIO<DT>::toF(src[i]);
    for (size_t i = n; i < static_cast<size_t>(G); ++i) x[i] = 0.0f;
  }
}

// Encodes blocks [b0, b1) of an input of `count` elements into a payload of nb blocks.
// `src` points at element 0 of the whole input.
template <int G, cocclDataType_t DT, class K>
COCCL_HOST_CLONES void encodeBlocks(const K& k, const typename FloatIO<DT>::T* src, size_t count,
                                    size_t b0, size_t b1, uint8_t* payload) {
  using Code = typename K::Code;
  constexpr PayloadGeometry geo = blockGeometry<K, G>();
  const size_t nb = geo.blocks(count);
  alignas(64) float x[G];
  alignas(64) float y[G];
  for (size_t b = b0; b < b1; ++b) {
    const size_t base = b * G;
    loadBlock<G, DT>(src + base, std::min<size_t>(G, count - base), x);
    uint32_t w = k.template encode<G>(x, y, reinterpret_cast<Code*>(payload + geo.codesAt(b)));
    storeWord(payload + geo.metaAt(nb, b), w);
  }
}

// Sinks receive one decoded block: put(base, z, n) with z[0, n) the fp32 values of elements
// [base, base+n).
template <cocclDataType_t DT>
struct StoreSink {
  typename FloatIO<DT>::T* out;
  void put(size_t base, const float* z, size_t n) const {
    typename FloatIO<DT>::T* o = out + base;
    for (size_t i = 0; i < n; ++i) o[i] = FloatIO<DT>::fromF(z[i]);
  }
};

struct AccumulateSink {
  float* acc;
  void put(size_t base, const float* z, size_t n) const {
    float* a = acc + base;
    for (size_t i = 0; i < n; ++i) a[i] = a[i] + z[i];
  }
};

template <int G, class K, class Sink>
COCCL_HOST_CLONES void decodeBlocks(const K& k, const uint8_t* payload, size_t count,
                                    const Sink& sink) {
  using Code = typename K::Code;
  constexpr PayloadGeometry geo = blockGeometry<K, G>();
  const size_t nb = geo.blocks(count);
  alignas(64) float z[G];
  for (size_t b = 0; b < nb; ++b) {
    const size_t base = b * G;
    k.template decode<G>(reinterpret_cast<const Code*>(payload + geo.codesAt(b)),
                         loadWord(payload + geo.metaAt(nb, b)), z);
    sink.put(base, z, std::min<size_t>(G, count - base));
  }
}

// One term of the owner step's fp32 sum in rank order: the first assigned, the others added.
template <int G>
COCCL_BLOCK_INLINE void addTerm(float* acc, const float* z, bool first) {
  if (first) {
    for (int i = 0; i < G; ++i) acc[i] = z[i];
  } else {
    for (int i = 0; i < G; ++i) acc[i] = acc[i] + z[i];
  }
}

// acc *= scale when scale != 1 (AVG).
template <int G>
COCCL_BLOCK_INLINE void scaleBlock(float* acc, float scale) {
  if (scale != 1.0f) {
    for (int i = 0; i < G; ++i) acc[i] = acc[i] * scale;
  }
}

// Whether K reduces in the rotated domain (K::kRotatedReduce, for the element types of
// K::rotatedReduceFor(bytes), with
//   template <int G> bool decodeRotated(const Code*, uint32_t word, float* out) const;
//   template <int G> void rotate(float* v) const;                       (v <- H v)
//   template <int G> bool encodeRotated(const float* w, Code*, uint32_t* word) const;
// as src/codecs/fp8_ash_ds/ash_block.h defines them).
template <class K, class = void>
struct RotatedReduce : std::false_type {};
template <class K>
struct RotatedReduce<K, std::void_t<decltype(K::kRotatedReduce)>>
    : std::integral_constant<bool, K::kRotatedReduce> {};

// The owner step of one whole block b in the rotated domain (ash_block.h's order): false when
// the block must take the linear order (nothing written then).
template <int G, cocclDataType_t DT, class K>
COCCL_BLOCK_INLINE bool reduceBlockRotated(const K& k, const void* const* ins, int p, int self,
                                           const typename FloatIO<DT>::T* selfBlock, size_t b,
                                           size_t nb, float scale, uint8_t* out,
                                           typename FloatIO<DT>::T* decodedBlock) {
  using Code = typename K::Code;
  constexpr PayloadGeometry geo = blockGeometry<K, G>();
  alignas(64) float acc[G];
  alignas(64) float z[G];
  for (int r = 0; r < p; ++r) {
    if (r == self) {
      loadBlock<G, DT>(selfBlock, G, z);
      k.template rotate<G>(z);
    } else {
      const uint8_t* in = static_cast<const uint8_t*>(ins[r]);
      if (!k.template decodeRotated<G>(reinterpret_cast<const Code*>(in + geo.codesAt(b)),
                                       loadWord(in + geo.metaAt(nb, b)), z))
        return false;
    }
    addTerm<G>(acc, z, r == 0);
  }
  scaleBlock<G>(acc, scale);
  Code* codes = reinterpret_cast<Code*>(out + geo.codesAt(b));
  uint32_t w = 0;
  if (!k.template encodeRotated<G>(acc, codes, &w)) return false;
  storeWord(out + geo.metaAt(nb, b), w);
  if (decodedBlock != nullptr) {
    k.template decode<G>(codes, w, z);
    StoreSink<DT>{decodedBlock}.put(0, z, G);
  }
  return true;
}

// Whether K's owner step may split its sum (K::splitSum(), int8_block.h's order), with
//   bool splitSum() const;
//   template <int G> bool decodeUntransformed(const Code*, uint32_t word, float* out) const;
//   template <int G> void rotate(float* v) const;                       (v <- H v)
template <class K, class = void>
struct SplitSum : std::false_type {};
template <class K>
struct SplitSum<K, std::void_t<decltype(std::declval<const K&>().splitSum())>> : std::true_type {};

// acc = the split sum of block b (int8_block.h): R over the rotated payload blocks, L over the
// raw input and the other payload blocks, each in rank order, then fwht(R) + L.
template <int G, cocclDataType_t DT, class K>
COCCL_BLOCK_INLINE void sumBlockSplit(const K& k, const void* const* ins, int p, int self,
                                      const typename FloatIO<DT>::T* selfBlock, size_t n, size_t b,
                                      size_t nb, float* acc, float* z) {
  using Code = typename K::Code;
  constexpr PayloadGeometry geo = blockGeometry<K, G>();
  alignas(64) float rot[G];
  bool haveRot = false, haveLin = false;
  for (int r = 0; r < p; ++r) {
    bool rotated = false;
    if (r == self) {
      loadBlock<G, DT>(selfBlock, n, z);
    } else {
      const uint8_t* in = static_cast<const uint8_t*>(ins[r]);
      rotated = k.template decodeUntransformed<G>(
          reinterpret_cast<const Code*>(in + geo.codesAt(b)), loadWord(in + geo.metaAt(nb, b)), z);
    }
    if (rotated) {
      addTerm<G>(rot, z, !haveRot);
      haveRot = true;
    } else {
      addTerm<G>(acc, z, !haveLin);
      haveLin = true;
    }
  }
  if (haveRot) {
    k.template rotate<G>(rot);
    if (haveLin) addTerm<G>(rot, acc, false);
    for (int i = 0; i < G; ++i) acc[i] = rot[i];
  }
}

// The fused two-shot owner step, block by block: acc = sum_r (r == self ? convert(selfIn) :
// decode(ins[r])) in rank order (first term assigned, the others added), acc *= scale when
// scale != 1, out = encode(acc as fp32), decoded = decode(out) in dt: bitwise equal to running
// decode / decodeAccumulate / encode(fp32) / decode over the whole chunk. A codec that reduces
// in the rotated domain (RotatedReduce<K>) takes reduceBlockRotated's order instead for every
// whole block that allows it (the partial last block and the blocks it refuses stay linear);
// one whose sum splits (SplitSum<K>, K::splitSum()) forms acc by sumBlockSplit for every block.
template <int G, cocclDataType_t DT, class K>
COCCL_HOST_CLONES void decodeReduceEncodeBlocks(const K& k, const void* const* ins, int p, int self,
                                                const typename FloatIO<DT>::T* selfIn, size_t count,
                                                float scale, uint8_t* out,
                                                typename FloatIO<DT>::T* decoded) {
  using Code = typename K::Code;
  constexpr PayloadGeometry geo = blockGeometry<K, G>();
  const size_t nb = geo.blocks(count);
  alignas(64) float acc[G];
  alignas(64) float z[G];
  for (size_t b = 0; b < nb; ++b) {
    const size_t base = b * G;
    const size_t n = std::min<size_t>(G, count - base);
    if constexpr (RotatedReduce<K>::value) {
      if (K::rotatedReduceFor(static_cast<int>(sizeof(typename FloatIO<DT>::T))) &&
          n == static_cast<size_t>(G) &&
          reduceBlockRotated<G, DT>(k, ins, p, self, selfIn + base, b, nb, scale, out,
                                    decoded != nullptr ? decoded + base : nullptr))
        continue;
    }
    bool split = false;
    if constexpr (SplitSum<K>::value) split = k.splitSum();
    if (split) {
      if constexpr (SplitSum<K>::value)
        sumBlockSplit<G, DT>(k, ins, p, self, selfIn + base, n, b, nb, acc, z);
    } else {
      for (int r = 0; r < p; ++r) {
        if (r == self) {
          loadBlock<G, DT>(selfIn + base, n, z);
        } else {
          const uint8_t* in = static_cast<const uint8_t*>(ins[r]);
          k.template decode<G>(reinterpret_cast<const Code*>(in + geo.codesAt(b)),
                               loadWord(in + geo.metaAt(nb, b)), z);
        }
        addTerm<G>(acc, z, r == 0);
      }
    }
    scaleBlock<G>(acc, scale);
    // positions past count are zero padding, exactly as encode(fp32 acc) would see them
    for (size_t i = n; i < static_cast<size_t>(G); ++i) acc[i] = 0.0f;
    Code* codes = reinterpret_cast<Code*>(out + geo.codesAt(b));
    uint32_t w = k.template encode<G>(acc, z, codes);
    storeWord(out + geo.metaAt(nb, b), w);
    if (decoded != nullptr) {
      k.template decode<G>(codes, w, z);
      StoreSink<DT>{decoded}.put(base, z, n);
    }
  }
}

}  // namespace codec_detail
}  // namespace coccl
