// The device executors of a communicator, probed at init (collective: every rank calls it, in
// order, and every rank gets the same list). CUDA builds: device_executors.cc; host-only
// builds: device_executors_none.cc (an empty list and the reason).
//
// Which executors come up (every input below is agreed across ranks first):
// - COCCL_DEVICE_TRANSPORT=nccl: the NCCL executor, for every operation.
// - cuda_ipc or auto: the CUDA IPC executor when every rank is on this host and it maps every
//   peer's region; with it, the NCCL executor for the exact operations (exact-only) when
//   COCCL_DEVICE_EXACT=nccl, or auto and every rank has its own GPU. auto without CUDA IPC:
//   the NCCL executor for everything when every rank has a CUDA device.
// `ncclExactAsked` (CodecPolicy::asksForNcclExact, agreed with the policy): a policy rule gives
// some uncompressed calls to the real NCCL, so beside CUDA IPC the exact-only NCCL executor
// comes up also where the default would not have it (it then takes only those calls), except
// under COCCL_DEVICE_EXACT=coccl (coccl's kernels then run those calls too).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/executor.h"
#include "comm/context.h"

namespace coccl {

struct DeviceExecutors {
  std::vector<std::unique_ptr<Executor>> list;  // routing order
  std::string reason;                           // why the list is empty
};

DeviceExecutors probeDeviceExecutors(CommContext& ctx, bool ncclExactAsked);

// True when this library was built with the device executors.
bool deviceExecutorsBuilt();

}  // namespace coccl
