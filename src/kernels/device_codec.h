// Host-callable launchers of the CUDA codec kernels (library coccl_kernels, built when the CUDA
// path is on). Plain C++: no CUDA header needed; streams are cudaStream_t as forward-declared
// by include/coccl.h (nullptr = the legacy default stream).
//
// Every launcher enqueues on `stream` and returns at once (no host synchronisation, no
// allocation; valid under CUDA graph capture). Payloads have exactly the host codec's bytes for
// the same input (src/codecs, layout in src/codecs/block_driver.h): a payload written here
// decodes on the host and vice versa, bit for bit (tests/gpu/codec prove it).
//
// Errors: a bad argument (unsupported dtype or codec, p out of range, null pointer with
// count > 0) throws coccl::Error(cocclInvalidArgument) before anything is enqueued; a failed
// launch throws coccl::Error(cocclUnhandledCudaError) with CUDA's message (src/core/error.h).
// Asynchronous kernel faults surface at the caller's next synchronisation, as usual in CUDA.
//
// Pointers are device (or managed / host-registered) memory. Typed buffers need their natural
// alignment (16 bytes takes the vector path); payloads any alignment (4 or 8 bytes takes it).
// count = 0 is a no-op. Types: fp32, fp16, bf16 for int8 / fp8_ash_ds; the None codec (kind
// None: payload = the raw elements) copies any type and reduces fp32 / fp16 / bf16.
// (The unfused comparison kernels of the benchmark are not part of this library:
// perf/kernel_bench/unfused/unfused_codec.h.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "coccl.h"
#include "kernels/codec_desc.h"

namespace coccl {
namespace kernels {

// Largest p of decodeAccumulate / decodeReduceEncode (the payload pointers travel by value
// in the kernel's parameters).
constexpr int kMaxReduceInputs = 64;

// Payload bytes of `count` elements of dt: codecGeometry(d, element size).payloadBytes(count)
// (for None, count * element size).
size_t payloadBytes(const CodecDesc& d, cocclDataType_t dt, size_t count);

// Whether a CUDA device is usable (cudaGetDeviceCount > 0; checked once).
bool deviceAvailable();

// out[0, payloadBytes) = encode(in[0, count) of type dt).
void encode(const CodecDesc& d, const void* in, cocclDataType_t dt, size_t count, void* out,
            cudaStream_t stream);

// out[0, count) of type dt = decode(payload in).
void decode(const CodecDesc& d, const void* in, size_t count, cocclDataType_t dt, void* out,
            cudaStream_t stream);

// acc[i] = (((acc[i] + decode(ins[0])[i]) + decode(ins[1])[i]) + ...) in fp32, i.e. the host's
// decodeAccumulate of ins[0], ..., ins[p-1] in that order, in one pass over acc. `ins` is a
// HOST array of p device pointers to payloads (for None: buffers of type dt), 1 <= p <= 64.
void decodeAccumulate(const CodecDesc& d, const void* const* ins, int p, size_t count,
                      cocclDataType_t dt, float* acc, cudaStream_t stream);

// The two-shot owner step, fused: acc = sum over r = 0..p-1 in order (first term assigned) of
// (r == self ? convert(selfIn) : decode(ins[r])); acc *= scale if scale != 1 (1/p for AVG);
// out = encode(acc) (payload of count elements); decoded (if not null) = decode(out) in dt.
// Bitwise the host's Codec::decodeReduceEncode, in the codec's own sum order where it has one
// (fp8_ash_ds: ash_block.h; int8: int8_block.h). self = -1 (an extension of the host API):
// no raw input, all p terms are payloads. `ins` is a HOST array of p device pointers
// (ins[self] is not read), 1 <= p <= 64. selfIn may equal decoded (in place).
void decodeReduceEncode(const CodecDesc& d, const void* const* ins, int p, int self,
                        const void* selfIn, cocclDataType_t dt, size_t count, float scale,
                        void* out, void* decoded, cudaStream_t stream);

}  // namespace kernels
}  // namespace coccl
