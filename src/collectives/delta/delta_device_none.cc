// Host-only builds: no device buffers exist, so the device difference mode is never reached.
#include "collectives/delta/delta_device.h"
#include "core/error.h"

namespace coccl {

struct DeltaDevice::Impl {};

DeltaDevice::DeltaDevice(int) {}
DeltaDevice::~DeltaDevice() = default;
bool DeltaDevice::built() {
  return false;
}

void DeltaDevice::run(const CollRequest&, int, int, size_t, const Gather&, CollStats&) {
  COCCL_THROW(cocclInvalidUsage, "AllGatherDelta: this coccl was built without CUDA");
}

}  // namespace coccl
