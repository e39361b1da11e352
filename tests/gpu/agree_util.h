// The GPU agreement tests' cases and helpers (test_device_agree.cc, test_device_agree_staged.cc):
// one call per rank, one rank running another call than the others, and the check that every
// rank reports the difference.
#pragma once

#include <cuda_runtime.h>

#include <initializer_list>
#include <ostream>

#include "coccl.h"
#include "gpu_util.h"

namespace coccl::test {

enum class SideColl { AllReduce, ReduceScatter, AllGather };

struct Side {
  SideColl coll = SideColl::AllReduce;  // count: per rank (ReduceScatter's recvcount)
  size_t count = 65536;
  cocclDataType_t dt = cocclFloat32;
  cocclRedOp_t op = cocclSum;
  int root = 0;
  bool broadcast = false;
  const char* codec = nullptr;  // per-call codec
};

struct Case {
  const char* name;
  Side common, odd;  // rank 2 runs `odd`, the others `common`
  const char* says;
};

inline void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

inline Side with(Side s, void (*f)(Side&)) {
  f(s);
  return s;
}

// Rank r's side of case k: its buffers (recvbuff filled with 0xCD), its stream, its call.
struct SideCall {
  Side s;
  size_t nranks;
  size_t bytes;  // of recvbuff
  DevBuf in, out;
  cudaStream_t st = nullptr;
  cocclCodec_t codec = nullptr;

  SideCall(const Case& k, int rank, int oddRank = 2, int worldSize = 3)
      : s(rank == oddRank ? k.odd : k.common),
        nranks(static_cast<size_t>(worldSize)),
        bytes(elemBytes() * (s.coll == SideColl::AllGather ? nranks : 1)),
        in(elemBytes() * (s.coll == SideColl::ReduceScatter ? nranks : 1), 0x11),
        out(bytes, 0xCD) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    if (s.codec) {
      EXPECT_EQ(cocclCodecCreate(s.codec, &codec), cocclSuccess);
    }
  }
  size_t elemBytes() const { return s.count * (s.dt == cocclFloat32 ? 4 : 2); }  // of `count`
  ~SideCall() {
    if (codec) cocclCodecDestroy(codec);
    if (st) cudaStreamDestroy(st);
  }
  // Enqueues the call on st; returns its result.
  cocclResult_t enqueue(cocclComm_t comm) {
    if (s.broadcast) return cocclBroadcast(in.data(), out.data(), s.count, s.dt, s.root, comm, st);
    switch (s.coll) {
      case SideColl::ReduceScatter:
        return cocclReduceScatterCodec(in.data(), out.data(), s.count, s.dt, s.op, codec, comm, st);
      case SideColl::AllGather:
        return cocclAllGatherCodec(in.data(), out.data(), s.count, s.dt, codec, comm, st);
      default:
        return cocclAllReduceCodec(in.data(), out.data(), s.count, s.dt, s.op, codec, comm, st);
    }
  }
};

// The communicator's asynchronous error once it is set, or after 15 s (cocclSuccess then).
cocclResult_t waitAsyncError(cocclComm_t comm);

// Waits for `streams`; expects no asynchronous error on r's communicator (no false alarm).
void syncedWithoutAsyncError(Rank& r, std::initializer_list<cudaStream_t> streams);

// Ranks whose calls differ, where the check runs before the call or in its first exchange and
// does not hold it back (NCCL's call check, the staged pipeline's): every rank gets
// `cocclInvalidUsage` and the next call names the field and the path (`says`); the call itself may
// hang (different counts), so the test waits for the error, not for the stream, then aborts, which
// releases it. `nranks` ranks, the last one running k.odd.
void everyRankFailsBeforeTheCall(const Case& k, GpuRunOptions o, const char* path, int nranks = 3);

}  // namespace coccl::test
