// Tile codecs: the block math of src/kernels/*_block.h for a codec block of G elements spread
// over L lanes of a warp, 32/L blocks a warp at once. The parts:
//   tile_math.cuh   layout (TileShape), reductions, Hadamard transform, scale math
//   tile_ash.cuh    fp8_ash_ds (TileAsh)
//   tile_int8.cuh   int8 (TileInt8)
//   tile_io.cuh     typed / payload tile loads and stores, the warp's block loop, staging
//   tile_loops.cuh  the chunk-level encode / decode loops (direct or staged)
#pragma once

#include "kernels/cuda/tile_ash.cuh"
#include "kernels/cuda/tile_int8.cuh"
#include "kernels/cuda/tile_io.cuh"
#include "kernels/cuda/tile_math.cuh"

namespace coccl {
namespace kdev {

// Codec families: the tile codec for a shape S.
template <class F>
struct AshFamily {
  template <class S>
  using Tile = TileAsh<F, S>;
};
struct Int8Family {
  template <class S>
  using Tile = TileInt8<S>;
};

}  // namespace kdev
}  // namespace coccl
