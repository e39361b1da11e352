// Exact (uncompressed) collective kernels, Send/Recv and the abort kernel (bodies in kernels.cuh).
#include "collectives/cuda_ipc/kernels.cuh"
#include "collectives/cuda_ipc/launch.h"

namespace coccl {
namespace dev {
namespace {

__global__ void __launch_bounds__(kThreads, 1) reduceExactKernel(const Ctx* g, const ReduceArgs a) {
  reduceKernelBody<ExactMode>(g, a);
}

__global__ void __launch_bounds__(kThreads, 1) gatherExactKernel(const Ctx* g, const GatherArgs a) {
  gatherKernelBody<ExactMode>(g, a);
}

__global__ void __launch_bounds__(kThreads, 1) p2pKernel(const Ctx* g, const P2PArgs a) {
  p2pKernelBody(g, a);
}

__global__ void __launch_bounds__(kThreads, 1) poisonKernel(const Ctx* g) { poisonKernelBody(g); }

}  // namespace

int residentPerSmExact() {
  int least = -1;
  leastResident(least, reduceExactKernel);
  leastResident(least, gatherExactKernel);
  leastResident(least, p2pKernel);
  (void)cudaGetLastError();
  return least < 0 ? 0 : least;
}

cudaError_t launchReduceExact(const Ctx* ctx, const ReduceArgs& a, int nblocks, cudaStream_t s) {
  reduceExactKernel<<<nblocks, kThreads, 0, s>>>(ctx, a);
  return cudaGetLastError();
}

cudaError_t launchGatherExact(const Ctx* ctx, const GatherArgs& a, int nblocks, cudaStream_t s) {
  gatherExactKernel<<<nblocks, kThreads, 0, s>>>(ctx, a);
  return cudaGetLastError();
}

cudaError_t launchP2P(const Ctx* ctx, const P2PArgs& a, int nblocks, cudaStream_t s) {
  p2pKernel<<<nblocks, kThreads, 0, s>>>(ctx, a);
  return cudaGetLastError();
}

cudaError_t launchPoison(const Ctx* ctx, int nblocks, cudaStream_t s) {
  poisonKernel<<<nblocks, 1 * 32, 0, s>>>(ctx);
  return cudaGetLastError();
}

}  // namespace dev
}  // namespace coccl
