// CUDA IPC transport: one device allocation per rank and communicator ("region"), mapped into
// every other rank of the node through cudaIpcGetMemHandle / cudaIpcOpenMemHandle, so that a
// kernel of rank r can load and store rank q's region directly. What lives in a region (flags,
// staging) is the business of the device collectives (src/collectives/device); this layer only
// allocates, shares, maps and frees, and knows nothing of codecs or collectives.
//
// Ranks may share one GPU (several processes on one device) or use different GPUs of one node
// (peer access is enabled lazily by cudaIpcOpenMemHandle). Ranks that are threads of one
// process use each other's pointers directly (CUDA IPC cannot open a handle of its own process).
//
// Creation is collective over the bootstrap and never throws for a rank without a device or a
// failed allocation / mapping: every rank ends with usable() == true, or every rank with false
// and the same reason().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace coccl {

class Bootstrap;

class CudaIpcRegion {
 public:
  // device: the CUDA device current on the calling thread, or -1 when this rank has none.
  // bytes: the size of every rank's region. agree: words that must be equal on every rank
  // (the layout parameters); a mismatch disables the regions with a reason naming the word.
  // Not usable either (the reason names the ranks and CUDA_MODULE_LOADING=EAGER) when two ranks
  // are threads of one process on one device whose kernels load lazily (cudaLazyModuleLoading):
  // a kernel loaded on its first launch by one may wait for the other's spinning kernels, which
  // wait for it (a deadlock: 4 thread ranks on one GPU with the int4 plug-in hung); decided
  // before any peer is mapped.
  CudaIpcRegion(Bootstrap& bs, int device, size_t bytes, const std::vector<uint64_t>& agree,
                uint64_t hostHash);
  ~CudaIpcRegion();
  CudaIpcRegion(const CudaIpcRegion&) = delete;
  CudaIpcRegion& operator=(const CudaIpcRegion&) = delete;

  bool usable() const { return usable_; }
  const std::string& reason() const { return reason_; }
  int device() const { return device_; }
  size_t bytes() const { return bytes_; }
  // Device pointers (valid on this rank's device) of every rank's region; peer(rank()) is the
  // local one.
  char* peer(int r) const { return ptrs_[static_cast<size_t>(r)]; }
  char* local() const { return local_; }

  // Unmaps the peers' regions (before the peers free them: a region must not be freed while
  // another process still maps it). Idempotent; the local region stays until destruction.
  void closePeers();

 private:
  void release();

  int rank_;
  int nranks_;
  int device_;
  size_t bytes_;
  bool usable_ = false;
  std::string reason_;
  char* local_ = nullptr;
  std::vector<char*> ptrs_;
  std::vector<bool> opened_;  // ptrs_[r] came from cudaIpcOpenMemHandle
};

}  // namespace coccl
