// One collective call on device buffers and the same call on host buffers (the host path, the
// reference), with nccl-tests' buffer placement; the outputs must match bit for bit.
#pragma once

#include <cstdint>
#include <string>

#include "gpu_util.h"

namespace coccl::test {

enum class DColl { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };
const char* dcollName(DColl c);

struct DCase {
  DColl coll = DColl::AllReduce;
  cocclDataType_t dt = cocclFloat32;
  cocclRedOp_t op = cocclSum;
  size_t count = 0;  // the call's count (recvcount / sendcount for RS / AG)
  bool inPlace = false;
  int root = 0;
  cocclCodec_t codec = nullptr;  // coccl*Codec with it (AllReduce, ReduceScatter, AllGather)
  uint64_t seed = 1;
  // Optional: overrides the random input of this rank (sendElems elements of dt).
  const std::vector<uint8_t>* input = nullptr;
};

std::string describe(const DCase& c);

struct DResult {
  std::vector<uint8_t> device;  // the rank's receive buffer after the device call
  std::vector<uint8_t> host;    // the same after the host-path call
  size_t outOffset = 0, outBytes = 0;  // where the call's output lies in them
  std::string deviceAlgorithm;  // cocclCommGetLastCollStats' algorithm after the device call
};

// Runs c on device buffers (stream s) and host buffers; checks API results, guard zones and
// bitwise equality of the whole receive buffers (fp32/fp64 NaN payloads aside; ReduceScatter
// through a codec: +-0 equal).
// Returns the buffers for further checks.
DResult runAndCompare(const Rank& r, const DCase& c, cudaStream_t s);

// The host path's AllReduce (SUM; through `codec` unless null) of hostPattern(n, dt, a, b + rank)
// on every rank: the reference of replayed / back-to-back device calls.
std::vector<uint8_t> hostReference(const Rank& r, size_t n, cocclDataType_t dt, int a, int b,
                                   cocclCodec_t codec);

// One bf16 AllReduce through `codec` (3 * 65536 + 1001 elements) captured into a CUDA graph and
// replayed `steps` times with a new input each time (input = step + rank): every replay bitwise
// the host path's result for that step, never the previous step's. eagerEvery > 0: an eager
// exact AllReduce between replays every that many steps (sharing the device round numbers).
void checkGraphReplay(const Rank& r, cocclCodec_t codec, int steps, int eagerEvery);

}  // namespace coccl::test
