// CodecDesc: what a CUDA kernel needs to know about a codec, as a POD passed by value to
// kernels (Codec::deviceDesc fills it on the host). Payload layout and math are those of the
// host codecs (src/codecs/block_driver.h, src/codecs/<codec>/*_block.h); the payload's shape is
// codecGeometry(d) (kernels/payload_geometry.h), the one formula every size computation uses.
//
// CodecKind and the geometry of each kind come from the codec list (src/codecs/codec_list.h, a
// dependency-free header: the one thing of src/codecs this header includes).
#pragma once

#include <cstdint>

#include "codecs/codec_list.h"
#include "kernels/payload_geometry.h"

namespace coccl {

enum class CodecKind : int32_t {
#define COCCL_CODEC_KIND_(Kind, name, id, bits, meta, align) Kind = id,
  COCCL_CODEC_LIST(COCCL_CODEC_KIND_)
#undef COCCL_CODEC_KIND_
};

struct CodecDesc {
  CodecKind kind = CodecKind::None;
  int32_t block = 1;     // G (elements per codec block); 1 for None
  int32_t fp8E5M2 = 0;   // fp8_ash_ds: 0 = E4M3, 1 = E5M2
  int32_t rotate = 2;    // int8: 0 plain, 1 Hadamard rotation, 2 auto (per block)
  float lambda = 1e-6f;  // fp8_ash_ds ASH parameters
  float alphaMin = 1e-3f;
  float alphaMax = 1e3f;
};

// Whether k names a codec of the list.
COCCL_HD_CONSTEXPR bool isKnownCodecKind(CodecKind k) {
#define COCCL_CODEC_KNOWN_(Kind, name, id, bits, meta, align) \
  if (k == CodecKind::Kind) return true;
  COCCL_CODEC_LIST(COCCL_CODEC_KNOWN_)
#undef COCCL_CODEC_KNOWN_
  return false;
}

// Payload geometry of codec kind k with blocks of `block` elements (the list's code bits and
// metadata). A raw codec (None: code bits 0 in the list) has the geometry of its elements,
// PayloadGeometry::raw(rawElemBytes). An unknown kind gives an invalid geometry (block 0).
COCCL_HD_CONSTEXPR PayloadGeometry codecGeometry(CodecKind k, int32_t block,
                                                 int32_t rawElemBytes = 1) {
#define COCCL_CODEC_GEOMETRY_(Kind, name, id, bits, meta, align) \
  if (k == CodecKind::Kind)                                      \
    return (bits) == 0 ? PayloadGeometry::raw(rawElemBytes)      \
                       : PayloadGeometry::blocked((bits), (meta), block, (align));
  COCCL_CODEC_LIST(COCCL_CODEC_GEOMETRY_)
#undef COCCL_CODEC_GEOMETRY_
  return PayloadGeometry::blocked(8, 0, 0, 1);
}

COCCL_HD_CONSTEXPR PayloadGeometry codecGeometry(const CodecDesc& d, int32_t rawElemBytes = 1) {
  return codecGeometry(d.kind, d.block, rawElemBytes);
}

// Payload bytes of n elements of a blocked codec: codecGeometry(d).payloadBytes(n), i.e.
// ceil(n/G) blocks of G codes, then the blocks' metadata. (None: n * element size, computed by
// the caller or as codecGeometry(d, elementSize).payloadBytes(n).)
COCCL_HD_CONSTEXPR uint64_t codecPayloadBytes(const CodecDesc& d, uint64_t n) {
  return codecGeometry(d).payloadBytes(n);
}

}  // namespace coccl
