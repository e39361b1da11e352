#include "transport/cuda_ipc/ipc_region.h"

#include <unistd.h>

#include <cstring>

#include "core/agree.h"
#include "core/bootstrap.h"
#include "core/error.h"
#include "core/log.h"
#include "mem/cuda_check.h"
#include "mem/memtype.h"

namespace coccl {
namespace {

constexpr int kAgreeWords = 8;

// What every rank publishes about its region (fixed size, exchanged with allGather).
struct RegionRecord {
  int32_t ok;      // 1: allocated and exported
  int32_t device;  // CUDA device ordinal, -1 none
  int32_t pid;
  int32_t nagree;
  int32_t lazy;  // 1: this process loads kernels lazily (cudaLazyModuleLoading)
  int32_t pad;
  uint64_t hostHash;
  uint64_t bytes;
  uint64_t ptr;  // the region's address in the owner process (threads of one process)
  uint64_t agree[kAgreeWords];
  cudaIpcMemHandle_t handle;
  char why[128];  // when !ok
};

std::string cudaMsg(const char* what, cudaError_t e) {
  (void)cudaGetLastError();
  return format("%s: %s", what, cudaGetErrorString(e));
}

}  // namespace

CudaIpcRegion::CudaIpcRegion(Bootstrap& bs, int device, size_t bytes,
                             const std::vector<uint64_t>& agree, uint64_t hostHash)
    : rank_(bs.rank()), nranks_(bs.nranks()), device_(device), bytes_(bytes) {
  COCCL_CHECK_INTERNAL(agree.size() <= kAgreeWords, "too many agreement words");
  ptrs_.assign(static_cast<size_t>(nranks_), nullptr);
  opened_.assign(static_cast<size_t>(nranks_), false);

  std::vector<RegionRecord> recs(static_cast<size_t>(nranks_));
  RegionRecord& me = recs[static_cast<size_t>(rank_)];
  std::memset(&me, 0, sizeof(me));
  me.device = device;
  me.pid = static_cast<int32_t>(getpid());
  me.lazy = cudaLazyModuleLoading() ? 1 : 0;
  me.hostHash = hostHash;
  me.bytes = bytes;
  me.nagree = static_cast<int32_t>(agree.size());
  for (size_t i = 0; i < agree.size(); ++i) me.agree[i] = agree[i];
  std::string why;
  if (device < 0) {
    why = "no CUDA device is current on this rank's thread at init";
  } else {
    DeviceGuard g(device, DeviceGuard::kNoThrow);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      why = cudaMsg("cudaMalloc of the staging region", e);
    } else {
      local_ = static_cast<char*>(p);
      if ((e = cudaMemset(p, 0, bytes)) != cudaSuccess ||
          (e = cudaDeviceSynchronize()) != cudaSuccess) {
        why = cudaMsg("clearing the staging region", e);
      } else if ((e = cudaIpcGetMemHandle(&me.handle, p)) != cudaSuccess) {
        why = cudaMsg("cudaIpcGetMemHandle", e);
      } else {
        me.ok = 1;
        me.ptr = reinterpret_cast<uint64_t>(p);
      }
    }
  }
  if (!me.ok) std::snprintf(me.why, sizeof(me.why), "%s", why.c_str());
  bs.allGather(recs.data(), sizeof(RegionRecord));

  // Every rank reaches the same verdict from the same records.
  for (int r = 0; r < nranks_ && reason_.empty(); ++r)
    for (int q = r + 1; q < nranks_ && reason_.empty(); ++q) {
      const RegionRecord &a = recs[static_cast<size_t>(r)], &b = recs[static_cast<size_t>(q)];
      if (a.ok && a.lazy && a.hostHash == b.hostHash && a.pid == b.pid && a.device == b.device)
        reason_ = format(
            "ranks %d and %d share one CUDA context (process %d, device %d) under "
            "lazy module loading: a kernel loaded on its first launch would wait "
            "for another rank's transfer kernel, which waits for it (a deadlock); "
            "set CUDA_MODULE_LOADING=EAGER before CUDA starts, or run one rank per "
            "process",
            r, q, a.pid, a.device);
    }
  for (int r = 0; r < nranks_ && reason_.empty(); ++r) {
    const RegionRecord& x = recs[static_cast<size_t>(r)];
    if (!x.ok) reason_ = format("rank %d: %s", r, x.why);
  }
  for (int r = 0; r < nranks_ && reason_.empty(); ++r) {
    const RegionRecord& x = recs[static_cast<size_t>(r)];
    if (x.hostHash != recs[0].hostHash)
      reason_ = format("ranks 0 and %d are on different hosts (CUDA IPC needs one node)", r);
    else if (x.bytes != recs[0].bytes || x.nagree != recs[0].nagree)
      reason_ = format("ranks 0 and %d disagree on the staging size (%llu vs %llu bytes); set "
                       "COCCL_DEVICE_STAGING_BYTES and COCCL_DEVICE_BLOCKS alike on every rank",
                       r, static_cast<unsigned long long>(recs[0].bytes),
                       static_cast<unsigned long long>(x.bytes));
    for (int i = 0; i < x.nagree && reason_.empty(); ++i)
      if (x.agree[i] != recs[0].agree[i])
        reason_ = format("ranks 0 and %d disagree on device layout word %d (%llu vs %llu); set "
                         "COCCL_DEVICE_STAGING_BYTES and COCCL_DEVICE_BLOCKS alike on every rank",
                         r, i, static_cast<unsigned long long>(recs[0].agree[i]),
                         static_cast<unsigned long long>(x.agree[i]));
  }

  // Map the peers' regions; then agree on whether every rank mapped every peer.
  int32_t mapped = 1;
  std::string mapWhy;
  if (reason_.empty()) {
    DeviceGuard g(device, DeviceGuard::kNoThrow);
    for (int r = 0; r < nranks_; ++r) {
      const RegionRecord& x = recs[static_cast<size_t>(r)];
      if (r == rank_) {
        ptrs_[static_cast<size_t>(r)] = local_;
        continue;
      }
      if (x.pid == me.pid) {
        // Threads of one process: the pointer itself (enable peer access across devices).
        ptrs_[static_cast<size_t>(r)] = reinterpret_cast<char*>(x.ptr);
        if (x.device != device) {
          cudaError_t e = cudaDeviceEnablePeerAccess(x.device, 0);
          if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
            mapWhy = cudaMsg(format("peer access to device %d", x.device).c_str(), e);
            mapped = 0;
            break;
          }
          (void)cudaGetLastError();
        }
        continue;
      }
      void* p = nullptr;
      cudaError_t e = cudaIpcOpenMemHandle(&p, x.handle, cudaIpcMemLazyEnablePeerAccess);
      if (e != cudaSuccess) {
        mapWhy = cudaMsg(format("cudaIpcOpenMemHandle of rank %d's region", r).c_str(), e);
        mapped = 0;
        break;
      }
      ptrs_[static_cast<size_t>(r)] = static_cast<char*>(p);
      opened_[static_cast<size_t>(r)] = true;
    }
  } else {
    mapped = 0;
  }
  // Every rank learns whether every rank mapped every peer (the first failure's reason).
  const std::string mapReason = coccl::agree(bs, mapped ? "" : mapWhy.empty() ? "did not map" : mapWhy);
  if (reason_.empty()) reason_ = mapReason;
  usable_ = reason_.empty();
  if (!usable_) {
    release();
    COCCL_INFO(kLogTransport | kLogInit, "cuda_ipc: device path off: %s", reason_.c_str());
  } else {
    COCCL_INFO(kLogTransport | kLogInit, "cuda_ipc: %zu-byte region per rank on device %d, %d ranks",
               bytes_, device_, nranks_);
  }
}

void CudaIpcRegion::closePeers() {
  if (device_ < 0) return;
  DeviceGuard g(device_, DeviceGuard::kNoThrow);
  for (int r = 0; r < nranks_; ++r) {
    if (opened_[static_cast<size_t>(r)])
      COCCL_CUDA_WARN(cudaIpcCloseMemHandle(ptrs_[static_cast<size_t>(r)]));
    opened_[static_cast<size_t>(r)] = false;
    if (r != rank_) ptrs_[static_cast<size_t>(r)] = nullptr;
  }
}

void CudaIpcRegion::release() {
  if (device_ < 0) return;
  closePeers();
  DeviceGuard g(device_, DeviceGuard::kNoThrow);
  if (local_) COCCL_CUDA_WARN(cudaFree(local_));
  local_ = nullptr;
  ptrs_[static_cast<size_t>(rank_)] = nullptr;
}

CudaIpcRegion::~CudaIpcRegion() { release(); }

}  // namespace coccl
