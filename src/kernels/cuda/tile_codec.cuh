// Tile codecs: the block math of src/codecs/<codec>/*_block.h for a codec block of G elements
// spread over L lanes of a warp, 32/L blocks a warp at once. The parts:
//   tile_math.cuh   layout (TileShape), reductions, Hadamard transform, scale math
//   tile_io.cuh     typed / payload tile loads and stores, the warp's block loop, staging
//   tile_loops.cuh  the chunk-level encode / decode loops (direct or staged)
// and the codecs' tile families, one in each codec's folder (src/codecs/<codec>/tile_*.cuh:
// TileInt8 / Int8Family, TileAsh / AshFamily), each with its DeviceTiles<Kind> specialization.
//
// The kernel engine is instantiated from the codec list (src/codecs/codec_list.h):
// dispatchFamily and COCCL_DISPATCH_FAMILY visit every kind of the list. This header is the one
// place where src/kernels includes codec folders (header-only device tile families; the layer
// rule codecs -> kernels holds for everything that links: no kernels target links coccl_codecs).
// A new codec with device tiles adds its tile header's include here.
#pragma once

#include "codecs/codec_list.h"
#include "codecs/fp8_ash_ds/tile_ash.cuh"
#include "codecs/int8/tile_int8.cuh"
#include "kernels/codec_desc.h"
#include "kernels/cuda/tile_io.cuh"
#include "kernels/cuda/tile_math.cuh"

namespace coccl {
namespace kdev {

// Calls fn(Family{}) with the tile family of d (nothing for a codec without tiles: None).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Fn>
__host__ __device__ __forceinline__ void dispatchFamily(const CodecDesc& d, Fn&& fn) {
#define COCCL_DISPATCH_KIND_(Kind, name, id, bits, meta, align) \
  if (d.kind == CodecKind::Kind) {                              \
    DeviceTiles<CodecKind::Kind>::dispatch(d, fn);              \
    return;                                                     \
  }
  COCCL_CODEC_LIST(COCCL_DISPATCH_KIND_)
#undef COCCL_DISPATCH_KIND_
}

}  // namespace kdev
}  // namespace coccl

// Calls CALL with the type alias kFam set to the tile family of d (nothing for None), in a
// lambda capturing by reference.
#define COCCL_DISPATCH_FAMILY(d, CALL)                    \
  ::coccl::kdev::dispatchFamily((d), [&](auto kFamTag_) { \
    (void)kFamTag_;                                       \
    using kFam = decltype(kFamTag_);                      \
    CALL;                                                 \
  })
