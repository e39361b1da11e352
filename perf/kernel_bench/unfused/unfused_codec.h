// The unfused comparison of the CUDA codec kernels (library coccl_kernels_unfused: benchmark
// and test code, not part of coccl). fp8_ash_ds as separate passes through device memory:
// encode = block statistics (energy, absmax, alpha) -> transform (alpha * x, Hadamard, fp32 to
// scratch) -> scale (max |y|, the scale word) -> cast (codes; RAW blocks from the input);
// decode = dequantize (fp32 to scratch) -> transform, scale and cast to dt. Same bytes as the
// fused kernels of src/kernels/device_codec.h (tests/gpu/codec/test_gpu_codec.cc checks it;
// perf/kernel_bench times it). Errors as there.
// scratch: unfusedScratchBytes(d, count) bytes of device memory.
#pragma once

#include <cstddef>

#include "coccl.h"
#include "kernels/codec_desc.h"

namespace coccl {
namespace kernels {

size_t unfusedScratchBytes(const CodecDesc& d, size_t count);
void encodeUnfused(const CodecDesc& d, const void* in, cocclDataType_t dt, size_t count, void* out,
                   void* scratch, cudaStream_t stream);
void decodeUnfused(const CodecDesc& d, const void* in, size_t count, cocclDataType_t dt, void* out,
                   void* scratch, cudaStream_t stream);

}  // namespace kernels
}  // namespace coccl
