// The built-in codecs (codec_list.h) as plug-in ABI descriptors (include/coccl_codec.h): the
// registry registers these first, through registerCodec like any loaded plug-in. Their
// instances are the C++ codecs of src/codecs/<name>/ (BuiltinInstance); their device
// operations call the fused CUDA codec kernels (src/kernels/device_codec.h) in CUDA builds
// (builtin_device.cc; builtin_device_none.cc leaves them out of host-only builds).
#pragma once

#include <vector>

#include "coccl_codec.h"
#include "codecs/codec.h"

namespace coccl {
namespace codec_detail {

struct BuiltinInstance {
  CodecPtr codec;
};

// The descriptors of the codec list, in its order.
const std::vector<const cocclCodecPlugin_v1_t*>& builtinDescriptors();

// The C++ codec of a built-in descriptor's instance; null when `desc` is not a built-in.
CodecPtr builtinCodec(const cocclCodecPlugin_v1_t* desc, const void* instance);

// Whether this build has the CUDA codec kernels, and the device operations that call them
// (builtin_device.cc / builtin_device_none.cc).
bool builtinDeviceOpsBuilt();
cocclCodecDeviceOps_v1_t builtinDeviceOps();

// Runs fn, turning an Error (or any exception) into its return code and the thread's message
// (codecAbiThreadMessage): what a descriptor function must do at the C boundary.
template <class Fn>
int guarded(Fn&& fn);

}  // namespace codec_detail
}  // namespace coccl

#include "codecs/abi/abi_codec.h"
#include "core/error.h"

namespace coccl {
namespace codec_detail {

template <class Fn>
int guarded(Fn&& fn) {
  try {
    fn();
    return COCCL_CODEC_OK;
  } catch (const Error& e) {
    codecAbiThreadMessage() = e.what();
    return e.code() == cocclInvalidArgument ? COCCL_CODEC_E_INVALID
           : e.code() == cocclUnhandledCudaError ? COCCL_CODEC_E_CUDA
                                                 : COCCL_CODEC_E_INTERNAL;
  } catch (const std::exception& e) {
    codecAbiThreadMessage() = e.what();
    return COCCL_CODEC_E_INTERNAL;
  }
}

}  // namespace codec_detail
}  // namespace coccl
