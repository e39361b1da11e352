// Helpers of the emulated device-codec tests: warps run lane by lane on the CPU (tests/gpu/emu),
// and the element tag of a dtype.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "kernels/cuda/chunk_codec.cuh"

namespace coccl {
namespace test {

// Runs fn(WarpSet) in every lane of nwarps emulated warps: one emulated block of 32 * nwarps
// lanes (tests/gpu/emu), warp w = lanes [32w, 32w + 32).
inline void runWarps(int nwarps, const std::function<void(kdev::WarpSet)>& fn) {
  std::string err;
  const auto body = [&] { fn(kdev::WarpSet{static_cast<int>(threadIdx.x / 32), nwarps}); };
  ASSERT_TRUE(block_emu::runBlock(0, 1, 32u * static_cast<unsigned>(nwarps), body, &err)) << err;
}

// fn(Tag{}) for a codec type (fp32, fp16, bf16).
template <class Fn>
void withTag(cocclDataType_t dt, Fn&& fn) {
  if (dt == cocclFloat32)
    fn(kdev::Fp32Tag{});
  else if (dt == cocclFloat16)
    fn(kdev::Fp16Tag{});
  else
    fn(kdev::Bf16Tag{});
}

}  // namespace test
}  // namespace coccl
