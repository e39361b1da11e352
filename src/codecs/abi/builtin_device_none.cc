// Host-only builds: the built-in codecs have no device operations (builtin.h).
#include "codecs/abi/builtin.h"

namespace coccl {
namespace codec_detail {

bool builtinDeviceOpsBuilt() { return false; }
cocclCodecDeviceOps_v1_t builtinDeviceOps() { return {}; }

}  // namespace codec_detail
}  // namespace coccl
