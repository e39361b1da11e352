// The CUDA IPC executor's state and its staged mover, shared by cuda_ipc_executor.cc (setup,
// probe, errors, teardown) and cuda_ipc_run.cc (the calls). Private to src/collectives/cuda_ipc.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "codecs/codec.h"
#include "collectives/cuda_ipc/cuda_ipc_executor.h"
#include "collectives/cuda_ipc/dev_types.h"
#include "collectives/cuda_ipc/plan.h"
#include "collectives/staged/staged_codec.h"
#include "core/error.h"
#include "transport/cuda_ipc/ipc_region.h"

namespace coccl {

constexpr int kIpcEvents = 8;  // streams a group of send/recv may span

// The built-in codecs run in coccl's fused collective kernels; other codecs with device
// operations (plug-ins) on the staged pipeline.
inline bool fusedCodec(const Codec* codec) {
  return codec && codec->deviceDesc().kind != CodecKind::None;
}

struct CudaIpcExecutor::Impl {
  CommContext& comm;
  int device = -1;
  int nblocks = 0;
  dev::Layout lay;
  std::unique_ptr<CudaIpcRegion> region;
  dev::HostState* host = nullptr;     // host view of the mapped state
  dev::HostState* hostDev = nullptr;  // its device view
  dev::Ctx* ctx = nullptr;            // device memory
  uint64_t* phases = nullptr;         // COCCL_PHASE_TIMES: kMaxBlocks x kPhaseWords (device memory)
  cudaStream_t side = nullptr;        // internal stream (abort)
  cudaEvent_t joinIn[kIpcEvents] = {};
  cudaEvent_t joinOut = nullptr;
  bool used = false;
  bool aborted = false;
  bool tallied = false;  // nblocks counted in residency.h's tally of this device
  // Plug-in codecs with device launchers: the staged pipeline, its pieces moved by this
  // executor's P2P kernel (null when no such codec is registered).
  std::unique_ptr<ByteMover> mover;
  std::unique_ptr<StagedCodec> staged;
  // COCCL_STAGED_CALL_CHECK: each staged call's first exchange compares the call's descriptor
  // with every rank's (P2PArgs::callAgree), as the fused kernels do at their start.
  bool stagedAgree = false;

  explicit Impl(CommContext& c) : comm(c) {}
  ~Impl();

  void launched(cudaError_t e, const char* what) {
    used = true;
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      COCCL_THROW(cocclUnhandledCudaError, "%s kernel launch failed: %s (%s)", what,
                  cudaGetErrorName(e), cudaGetErrorString(e));
    }
  }
  dev::Planner planner() const {
    dev::Planner pl;
    pl.lay = lay;
    pl.nblocks = nblocks;
    pl.nranks = comm.nranks();
    pl.rank = comm.rank();
    return pl;
  }
  void allReduce(const CollRequest& r, CollStats& stats);
  void reduceScatter(const CollRequest& r, CollStats& stats);
  void allGather(const CollRequest& r, CollStats& stats);
  void broadcast(const CollRequest& r, CollStats& stats);
  void reduce(const CollRequest& r, CollStats& stats);
};

// The staged pipeline's exchanges as one P2P kernel of this executor on the pipeline's stream.
class IpcMover final : public ByteMover {
 public:
  explicit IpcMover(CudaIpcExecutor::Impl& m) : m_(m) {}
  void exchange(const std::vector<Xfer>& group, const CallDesc* agree, cudaStream_t s) override;
  bool agreesInExchange() const override { return true; }
  void abort() override;

 private:
  CudaIpcExecutor::Impl& m_;
};

}  // namespace coccl
