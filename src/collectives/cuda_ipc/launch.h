// Host-callable launchers of the collective kernels (defined in the *.cu files). Each enqueues
// one kernel of `nblocks` x kThreads on `stream` and returns the launch's error.
#pragma once

#include <cuda_runtime.h>

#include "collectives/cuda_ipc/dev_types.h"

namespace coccl {
namespace dev {

cudaError_t launchReduceExact(const Ctx* ctx, const ReduceArgs& a, int nblocks, cudaStream_t s);
cudaError_t launchGatherExact(const Ctx* ctx, const GatherArgs& a, int nblocks, cudaStream_t s);
cudaError_t launchP2P(const Ctx* ctx, const P2PArgs& a, int nblocks, cudaStream_t s);
// Raises the poison value in every flag this rank would raise at its peers (abort).
cudaError_t launchPoison(const Ctx* ctx, int nblocks, cudaStream_t s);

// Compressed AllReduce / ReduceScatter and AllGather, one instantiation per element type.
cudaError_t launchReduceCodecBf16(const Ctx* ctx, const ReduceArgs& a, int nblocks, cudaStream_t s);
cudaError_t launchReduceCodecFp16(const Ctx* ctx, const ReduceArgs& a, int nblocks, cudaStream_t s);
cudaError_t launchReduceCodecFp32(const Ctx* ctx, const ReduceArgs& a, int nblocks, cudaStream_t s);
cudaError_t launchGatherCodecBf16(const Ctx* ctx, const GatherArgs& a, int nblocks, cudaStream_t s);
cudaError_t launchGatherCodecFp16(const Ctx* ctx, const GatherArgs& a, int nblocks, cudaStream_t s);
cudaError_t launchGatherCodecFp32(const Ctx* ctx, const GatherArgs& a, int nblocks, cudaStream_t s);

// Blocks of kThreads threads that one SM holds at once, for the collective kernel of this
// translation unit with the lowest occupancy (registers and shared memory, on the current
// device; cudaOccupancyMaxActiveBlocksPerMultiprocessor). Asking loads every kernel, as eager
// module loading would. 0 when the runtime cannot say.
int residentPerSmExact();
int residentPerSmCodecBf16();
int residentPerSmCodecFp16();
int residentPerSmCodecFp32();

}  // namespace dev
}  // namespace coccl
