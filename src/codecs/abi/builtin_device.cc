// The built-in codecs' device operations (builtin.h): the fused CUDA codec kernels
// (src/kernels/device_codec.h) for the instance's CodecDesc. CUDA builds only.
#include "codecs/abi/builtin.h"
#include "kernels/device_codec.h"

namespace coccl {
namespace codec_detail {
namespace {

CodecDesc descOf(const void* instance) {
  return static_cast<const BuiltinInstance*>(instance)->codec->deviceDesc();
}
cocclDataType_t dtOf(int dtype) { return static_cast<cocclDataType_t>(dtype); }

int encode(const void* instance, const void* in, int dtype, size_t count, void* out, void*,
           cudaStream_t s) {
  return guarded([&] { kernels::encode(descOf(instance), in, dtOf(dtype), count, out, s); });
}

int decode(const void* instance, const void* in, size_t count, int dtype, void* out, void*,
           cudaStream_t s) {
  return guarded([&] { kernels::decode(descOf(instance), in, count, dtOf(dtype), out, s); });
}

int decodeAccumulate(const void* instance, const void* const* ins, int n, size_t count, int dtype,
                     float* acc, void*, cudaStream_t s) {
  return guarded(
      [&] { kernels::decodeAccumulate(descOf(instance), ins, n, count, dtOf(dtype), acc, s); });
}

int decodeReduceEncode(const void* instance, const void* const* ins, int p, int self,
                       const void* selfIn, int dtype, size_t count, float scale, void* out,
                       void* decoded, void*, cudaStream_t s) {
  return guarded([&] {
    kernels::decodeReduceEncode(descOf(instance), ins, p, self, selfIn, dtOf(dtype), count, scale,
                                out, decoded, s);
  });
}

}  // namespace

bool builtinDeviceOpsBuilt() { return true; }

cocclCodecDeviceOps_v1_t builtinDeviceOps() {
  return {encode, decode, decodeAccumulate, decodeReduceEncode};
}

}  // namespace codec_detail
}  // namespace coccl
