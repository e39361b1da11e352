// The codec interface. A codec turns `count` elements of fp32/fp16/bf16 into a self-contained
// payload of exactly encodedBytes(count) bytes and back. Codecs know nothing of ranks; the
// collectives cut messages into chunks (multiples of blockElems()) and encode each chunk into
// its own payload. Host and device implementations of a codec produce identical bytes for
// identical input (the block math lives in src/codecs/<codec>/*_block.h and src/kernels/*.h,
// shared by both; payload sizes are the codec's PayloadGeometry, kernels/payload_geometry.h).
//
// Thread-safety: all methods are const and reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "coccl.h"
#include "coccl_codec.h"
#include "kernels/codec_desc.h"

namespace coccl {

class Codec {
 public:
  virtual ~Codec() = default;

  // Short name ("none", "int8", "fp8_ash_ds"), the full canonical spec with every parameter
  // ("fp8_ash_ds:block=128,format=e4m3,..."), a stable numeric id and the payload format
  // version (bumped whenever the bytes for some input change).
  virtual const char* name() const = 0;
  virtual const std::string& spec() const = 0;
  virtual uint32_t id() const = 0;
  virtual uint32_t formatVersion() const = 0;

  // Input/output dtypes the codec compresses (fp32, fp16, bf16 for the lossy codecs; any for
  // "none") and reduction ops it can take part in (SUM, AVG).
  virtual bool supportsType(cocclDataType_t dt) const = 0;
  virtual bool supportsOp(cocclRedOp_t op) const = 0;
  virtual bool lossless() const = 0;

  // Elements per block: chunk boundaries inside a message must be multiples of this.
  virtual size_t blockElems() const = 0;
  // Exact payload size of `count` elements of `dt` (the none codec depends on dt).
  virtual size_t encodedBytes(size_t count, cocclDataType_t dt) const = 0;

  // Encodes in[0, count) of type dt into out[0, encodedBytes(count, dt)).
  virtual void encode(const void* in, cocclDataType_t dt, size_t count, void* out) const = 0;
  // Decodes a payload of `count` elements into out (type dt, RNE from fp32).
  virtual void decode(const void* in, size_t count, cocclDataType_t dt, void* out) const = 0;
  // acc[i] += decoded[i] in fp32 (payload encoded from `dt` input; for "none", in holds dt).
  virtual void decodeAccumulate(const void* in, size_t count, cocclDataType_t dt,
                                float* acc) const = 0;
  // decodeAccumulate of ins[0], ins[1], ..., ins[n-1] in that order (1 <= n <= 64): the
  // plug-in ABI's host operation takes them in one call, which must equal the calls one by one
  // (and the device operation of n payloads, which coccl uses, must equal this).
  virtual void decodeAccumulateMany(const void* const* ins, int n, size_t count,
                                    cocclDataType_t dt, float* acc) const {
    for (int k = 0; k < n; ++k) decodeAccumulate(ins[k], count, dt, acc);
  }
  // The two-shot owner step for one chunk: acc = sum over r = 0..p-1, in that order, of
  // (r == self ? convert(selfIn) : decode(ins[r])); acc *= scale (1, or 1/p for AVG);
  // out = encode(acc). `ins[self]` is ignored (may be null); selfIn is the owner's own raw
  // input of type dt (never quantized). scratch holds `count` floats. If `decoded` is not
  // null it receives decode(out) in type dt (what every rank will output). The sum is that
  // real number in a codec-defined fp32 order, the same on host and device: fp8_ash_ds forms
  // it in the rotated domain (src/codecs/fp8_ash_ds/ash_block.h), int8 (rotate=1, auto) sums
  // its rotated payload blocks before one transform (src/codecs/int8/int8_block.h), the others
  // as written.
  virtual void decodeReduceEncode(const void* const* ins, int p, int self, const void* selfIn,
                                  cocclDataType_t dt, size_t count, float scale, void* out,
                                  float* scratch, void* decoded) const = 0;

  // Documented bound on |decode(encode(x))_i - x_i| for any element i of a block whose input
  // has root-mean-square blockRms and largest magnitude blockAbsMax (one encode/decode; finite
  // input). coccl_perf's #wrong column counts elements outside it (scaled for the collective).
  virtual double elementErrorBound(double blockRms, double blockAbsMax) const = 0;

  // What a CUDA kernel needs to run this codec (a POD, see src/kernels/codec_desc.h). Codecs
  // without a device implementation keep the default (kind None).
  virtual CodecDesc deviceDesc() const { return CodecDesc{}; }

  // COCCL_CODEC_CAP_* bits (include/coccl_codec.h) this codec declares.
  virtual uint32_t capabilities() const { return lossless() ? COCCL_CODEC_CAP_LOSSLESS : 0u; }

  // ---- Device operations (the plug-in ABI's device launchers) -------------------------------
  // Every codec the registry makes (makeCodec) is a descriptor-backed codec (codecs/abi/); it
  // has these when the descriptor declares COCCL_CODEC_CAP_DEVICE. They enqueue on `stream`
  // with the results of the host operations above, bit for bit; `ins` is a host array of device
  // pointers; `ws` device memory of deviceWorkspaceBytes(count, dt, p) bytes (null when 0).
  // Throw Error on a failed launch or a bad argument (the default: cocclInvalidUsage).
  bool hasDeviceOps() const { return (capabilities() & COCCL_CODEC_CAP_DEVICE) != 0; }
  virtual size_t deviceWorkspaceBytes(size_t count, cocclDataType_t dt, int p) const { return 0; }
  virtual void deviceEncode(const void* in, cocclDataType_t dt, size_t count, void* out, void* ws,
                            cudaStream_t stream) const;
  virtual void deviceDecode(const void* in, size_t count, cocclDataType_t dt, void* out, void* ws,
                            cudaStream_t stream) const;
  // acc[i] += decode(ins[0])[i] + ... + decode(ins[n-1])[i] in that order, in fp32.
  virtual void deviceDecodeAccumulate(const void* const* ins, int n, size_t count,
                                      cocclDataType_t dt, float* acc, void* ws,
                                      cudaStream_t stream) const;
  // decodeReduceEncode above on the device (the owner step; decoded may be null).
  virtual void deviceDecodeReduceEncode(const void* const* ins, int p, int self,
                                        const void* selfIn, cocclDataType_t dt, size_t count,
                                        float scale, void* out, void* decoded, void* ws,
                                        cudaStream_t stream) const;
};

using CodecPtr = std::shared_ptr<const Codec>;

// Registry (codecs/abi/registry.h has the rest: loading plug-ins, registering descriptors).
// Specs are "name[:key=value,...]" (see README "Codecs"). Throws Error (cocclInvalidArgument)
// with a message naming the bad part when a spec does not parse or its codec is not registered
// (loading COCCL_CODEC_PLUGIN first, once per process).
CodecPtr makeCodec(const std::string& spec);
// Names of the registered codecs.
std::string codecNames();
// The message of a codec that refuses `count` elements of dt (encodedBytes 0 for count > 0:
// e.g. tah's counts that are not whole rows), naming the count and the block.
std::string countRefusal(const Codec& c, size_t count, cocclDataType_t dt);

}  // namespace coccl
