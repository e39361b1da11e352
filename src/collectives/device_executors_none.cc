// Host-only builds (no CUDA compiler): no device executors.
#include "collectives/device_executors.h"

namespace coccl {

DeviceExecutors probeDeviceExecutors(CommContext&, bool) {
  DeviceExecutors d;
  d.reason = "this coccl was built without CUDA";
  return d;
}

bool deviceExecutorsBuilt() { return false; }

}  // namespace coccl
