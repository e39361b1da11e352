// The GPU agreement tests' helpers (agree_util.h).
#include "agree_util.h"

#include <chrono>
#include <string>
#include <thread>

namespace coccl::test {

// The communicator's asynchronous error once it is set, or after 15 s (cocclSuccess then).
cocclResult_t waitAsyncError(cocclComm_t comm) {
  cocclResult_t async = cocclSuccess;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15)) {
    if (cocclCommGetAsyncError(comm, &async) != cocclSuccess) return cocclInternalError;
    if (async != cocclSuccess && async != cocclInProgress) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return async;
}

// Waits for `streams`; expects no asynchronous error on r's communicator (no false alarm).
void syncedWithoutAsyncError(Rank& r, std::initializer_list<cudaStream_t> streams) {
  for (cudaStream_t st : streams) CUDA_OK(cudaStreamSynchronize(st));
  cocclResult_t async = cocclSuccess;
  ASSERT_EQ(cocclCommGetAsyncError(r.comm, &async), cocclSuccess);
  EXPECT_EQ(async, cocclSuccess) << "rank " << r.rank << ": " << cocclGetLastError(r.comm);
}

// Ranks whose calls differ, where the check runs before the call or in its first exchange and
// does not hold it back (NCCL's call check, the staged pipeline's): every rank gets
// `cocclInvalidUsage` and the next call names the field and the path (`says`); the call itself may
// hang (different counts), so the test waits for the error, not for the stream, then aborts, which
// releases it. `nranks` ranks, the last one running k.odd.
void everyRankFailsBeforeTheCall(const Case& k, GpuRunOptions o, const char* path, int nranks) {
  o.config.timeoutMs = 20000;
  o.destroyComm = false;
  runGpuRanks(
      nranks,
      [&k, path, nranks](Rank& r) {
        SideCall c(k, r.rank, nranks - 1, nranks);
        EXPECT_EQ(c.enqueue(r.comm), cocclSuccess) << cocclGetLastError(r.comm);  // enqueued
        const cocclResult_t async = waitAsyncError(r.comm);
        EXPECT_EQ(async, cocclInvalidUsage) << "rank " << r.rank;
        EXPECT_EQ(
            cocclAllReduce(c.in.data(), c.out.data(), 16, cocclFloat32, cocclSum, r.comm, c.st),
            cocclInvalidUsage);
        const std::string msg = cocclGetLastError(r.comm);
        EXPECT_NE(msg.find(k.says), std::string::npos) << "rank " << r.rank << ": " << msg;
        EXPECT_NE(msg.find(path), std::string::npos) << msg;
        EXPECT_EQ(cocclCommAbort(r.comm), cocclSuccess);
        (void)cudaStreamSynchronize(c.st);  // released by the abort
        (void)cudaGetLastError();
        EXPECT_TRUE(c.in.guardsIntact() && c.out.guardsIntact()) << "rank " << r.rank;
      },
      o);
}

}  // namespace coccl::test
