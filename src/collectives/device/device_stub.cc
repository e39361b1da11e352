// Host-only builds (no CUDA compiler): no device path. DeviceComm::create returns null, so none
// of the other members is ever reached; they exist for the linker.
#include "collectives/device/device_comm.h"

#include "core/error.h"

namespace coccl {

struct DeviceComm::Impl {};

DeviceComm::DeviceComm() = default;
DeviceComm::~DeviceComm() = default;

std::unique_ptr<DeviceComm> DeviceComm::create(Communicator&) { return nullptr; }
int DeviceComm::currentDevice() { return -1; }
bool DeviceComm::built() { return false; }

namespace {
[[noreturn]] void noDevice() {
  COCCL_THROW(cocclInvalidUsage, "this coccl was built without CUDA: no device path");
}
const std::string kReason = "this coccl was built without CUDA";
}  // namespace

bool DeviceComm::usable() const { return false; }
const std::string& DeviceComm::reason() const { return kReason; }
int DeviceComm::device() const { return -1; }
void DeviceComm::allReduce(const void*, void*, size_t, cocclDataType_t, cocclRedOp_t,
                           const Codec*, cocclStream_t, CollStats&) { noDevice(); }
void DeviceComm::reduceScatter(const void*, void*, size_t, cocclDataType_t, cocclRedOp_t,
                               const Codec*, cocclStream_t, CollStats&) { noDevice(); }
void DeviceComm::allGather(const void*, void*, size_t, cocclDataType_t, const Codec*,
                           cocclStream_t, CollStats&) { noDevice(); }
void DeviceComm::broadcast(const void*, void*, size_t, cocclDataType_t, int, cocclStream_t,
                           CollStats&) { noDevice(); }
void DeviceComm::reduce(const void*, void*, size_t, cocclDataType_t, cocclRedOp_t, int,
                        cocclStream_t, CollStats&) { noDevice(); }
void DeviceComm::pointToPoint(const std::vector<P2POp>&, CollStats&) { noDevice(); }
cocclResult_t DeviceComm::asyncError() const { return cocclSuccess; }
void DeviceComm::abort() {}
void DeviceComm::quiesce() {}

}  // namespace coccl
