// Probing the device executors at init (device_executors.h).
#include "collectives/device_executors.h"

#include <algorithm>

#include "collectives/cuda_ipc/cuda_ipc_executor.h"
#include "collectives/cuda_ipc/dev_types.h"
#include "collectives/cuda_ipc/residency.h"
#include "collectives/nccl/nccl_executor.h"
#include "core/error.h"
#include "core/log.h"
#include "mem/cuda_check.h"
#include "mem/cuda_device.h"

namespace coccl {

bool deviceExecutorsBuilt() { return true; }

DeviceExecutors probeDeviceExecutors(CommContext& c, bool ncclExactAsked) {
  DeviceExecutors d;
  const CommConfig& cfg = c.config();
  const int p = c.nranks();
  const int dev = cfg.cudaDevice;  // recorded by cocclCommInitRank on the caller's thread
  // Every decision below is taken from values all ranks share: first the settings and devices.
  const std::string& tp = cfg.deviceTransport;
  const int32_t tpCode = tp == "nccl" ? 2 : tp == "cuda_ipc" ? 1 : 0;
  const std::string& ex = cfg.deviceExact;
  const int32_t exCode = ex == "nccl" ? 2 : ex == "coccl" ? 1 : 0;
  struct RankDev {
    int32_t device;     // ordinal, -1 none
    int32_t settings;   // tpCode + 4 * exCode
    int32_t resident;   // blocks of coccl's kernels its GPU holds at once (residency.h), 0 unknown
    int32_t pad = 0;
    uint64_t gpu;       // hash of the GPU's UUID (0 none): equal = one GPU shared
  };
  int resident = 0;
  if (dev >= 0 && tp != "nccl") {
    DeviceGuard g(dev);
    resident = dev::residentBlocks(dev);
  }
  std::vector<RankDev> devs(static_cast<size_t>(p));
  devs[static_cast<size_t>(c.rank())] =
      RankDev{dev, tpCode + 4 * exCode, resident, 0, gpuIdentity(dev)};
  c.bootstrap().allGather(devs.data(), sizeof(RankDev));
  bool allDevices = true, sameSettings = true, sharedGpu = false;
  int leastResident = 0, mostPerGpu = 1;  // over the ranks: the smallest capacity, the most
                                          // ranks of this communicator on one GPU
  for (int r = 0; r < p; ++r) {
    const RankDev& x = devs[static_cast<size_t>(r)];
    allDevices = allDevices && x.device >= 0;
    sameSettings = sameSettings && x.settings == tpCode + 4 * exCode;
    if (x.resident > 0 && (leastResident == 0 || x.resident < leastResident))
      leastResident = x.resident;
    int onGpu = 1;
    for (int q = 0; q < p; ++q)
      onGpu += q != r && x.gpu != 0 && devs[static_cast<size_t>(q)].gpu == x.gpu;
    mostPerGpu = std::max(mostPerGpu, onGpu);
  }
  sharedGpu = mostPerGpu > 1;
  if (!sameSettings) {
    d.reason = "COCCL_DEVICE_TRANSPORT or COCCL_DEVICE_EXACT differs across ranks";
    return d;
  }
  auto tryNccl = [&](const std::string& before) {
    if (!allDevices) {
      d.reason = before + "not every rank has a CUDA device";
      return;
    }
    std::string why;
    if (auto x = NcclExecutor::probe(c, dev, /*exactOnly=*/false, &why))
      d.list.push_back(std::move(x));
    else
      d.reason = before + why;
  };
  if (tp == "nccl") {
    tryNccl("");
    return d;
  }
  const int nblocks = cfg.deviceBlocks > 0
                          ? static_cast<int>(cfg.deviceBlocks)
                          : dev::autoBlocks(mostPerGpu, leastResident);
  std::string why;
  auto ipc = CudaIpcExecutor::probe(c, dev, nblocks, &why);
  if (!ipc) {
    d.reason = why;
    if (tp == "auto") tryNccl("CUDA IPC: " + why + "; NCCL: ");
    return d;
  }
  // The exact operations over the real NCCL: asked for, or (auto) when every rank has its own
  // GPU (NCCL refuses two ranks on one GPU; over NVLink its collectives beat coccl's exact
  // kernels, perf/RESULTS.md). Or a policy rule asks for it for some calls (it then takes only
  // those), unless COCCL_DEVICE_EXACT=coccl keeps it off (the NCCL shim does: it sends those
  // calls to its own NCCL communicator). The probe agrees across ranks: on everywhere or nowhere.
  const bool byDefault = exCode == 2 || (exCode == 0 && !sharedGpu && allDevices);
  if (p > 1 && (byDefault || (ncclExactAsked && exCode != 1))) {
    std::string whyExact;
    if (auto x = NcclExecutor::probe(c, dev, /*exactOnly=*/true, &whyExact)) {
      x->setTakesDefaultExact(byDefault);
      d.list.push_back(std::move(x));
    } else if (exCode == 2 || ncclExactAsked)
      COCCL_WARN("%s: %s; coccl's kernels run the uncompressed operations",
                 exCode == 2 ? "COCCL_DEVICE_EXACT=nccl" : "a policy rule's \"exact\": \"nccl\"",
                 whyExact.c_str());
    else
      COCCL_INFO(kLogInit, "uncompressed device operations on coccl's kernels (%s)",
                 whyExact.c_str());
  }
  d.list.push_back(std::move(ipc));
  return d;
}

}  // namespace coccl
