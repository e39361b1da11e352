// The built-in codecs, one line each. Everything that enumerates codecs derives from this list:
// CodecKind and the codec ids (kernels/codec_desc.h, codecs/codec_factories.h), the payload
// geometry of each kind (codecGeometry), the registry's table of factories (registry.cc), the
// factory declarations, and the device kernels' dispatch on the codec (the tile families of
// kernels/cuda/tile_codec.cuh). A codec is its folder (src/codecs/<name>/: host code, scalar
// block math, device tile family) plus its line here.
//
//   X(Kind, name, id, codeBits, metaBytes, metaAlign)
//     Kind       CodecKind enumerator; the factory is codec_detail::make<Kind>Codec(ParsedSpec)
//     name       the spec name (COCCL_CODEC=<name>:...)
//     id         stable codec id, part of the wire contract (= the CodecKind value)
//     codeBits   bits of one element's code; 0: the payload is the raw elements (None)
//     metaBytes  metadata bytes per block, stored after all codes (one fp32 scale: 4)
//     metaAlign  alignment of the metadata records
//
// Header-only and free of any dependency, so that src/kernels (which must not link the codecs
// library) may include it: the kernel engine is instantiated from this list.
#pragma once

#define COCCL_CODEC_LIST(X) \
  X(None, none, 0, 0, 0, 1) \
  X(Int8, int8, 1, 8, 4, 4) \
  X(Fp8AshDs, fp8_ash_ds, 2, 8, 4, 4)
