// Host-only builds: no device buffers exist, so compressed device Send/Recv is never reached.
#include "collectives/p2p_device/device_p2p.h"
#include "core/error.h"

namespace coccl {

struct DeviceP2P::Impl {};

DeviceP2P::DeviceP2P(int, int, int, Bootstrap&) {}
DeviceP2P::~DeviceP2P() = default;
bool DeviceP2P::built() { return false; }

void DeviceP2P::run(const std::vector<CollRequest>&, const Move&, CollStats&) {
  COCCL_THROW(cocclInvalidUsage, "compressed Send/Recv on device buffers: built without CUDA");
}

}  // namespace coccl
