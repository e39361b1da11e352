// The fault-injection run shared by the host test (test_fault_injection.cc) and the device test
// (tests/gpu/test_device_fault_injection.cc): n ranks as forked processes run the same seeded
// sequence of 200 mixed calls (exact and compressed AllReduce through the COCCL_CODEC policy
// and per-call codecs, ReduceScatter, AllGather, Broadcast, grouped Send/Recv) on the buffers
// of a FaultMemory (host or device). One rank, chosen by the seed, is killed with SIGKILL at a
// seeded point (a seeded delay after it entered a seeded call). Every survivor must then return
// an error (never success, never a hang) within COCCL_TIMEOUT_MS of the death, see the
// communicator broken, and abort or destroy it promptly; no process may crash or be left
// behind, no shared-memory segment may be left behind, and a survivor's output stays within a
// few lines. Every call that succeeds is checked (exact results bit for bit, compressed ones
// by relative L2 < 0.1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "coccl.h"

namespace coccl::test {

// Where a rank's call buffers live and how a call completes.
class FaultMemory {
 public:
  virtual ~FaultMemory() = default;
  // A buffer of `bytes` bytes (at least one), owned by this object until release().
  virtual void* alloc(size_t bytes) = 0;
  // Frees every buffer alloc() returned.
  virtual void release() = 0;
  virtual void upload(void* dst, const void* host, size_t bytes) = 0;
  virtual void download(void* host, const void* src, size_t bytes) = 0;
  // The stream the calls are enqueued on (nullptr on the host path).
  virtual cocclStream_t stream() = 0;
  // Called after a call was enqueued successfully: waits for it and returns its outcome
  // (cocclSuccess on the host path, where the call already completed; on the device path the
  // communicator's asynchronous error once the stream drained).
  virtual cocclResult_t complete(cocclComm_t comm) = 0;
};

struct FaultRankSetup {
  // In rank `rank`'s process before cocclGetUniqueId (e.g. make the device current).
  std::function<void(int rank)> beforeInit;
  // The rank's memory, made after its communicator exists.
  std::function<std::unique_ptr<FaultMemory>()> memory;
  // How long the parent waits for all ranks before it calls one hung (ms).
  int64_t hangLimitMs = 40000;
  // How late after the death a survivor may notice it, beyond COCCL_TIMEOUT_MS (ms).
  double noticeSlackMs = 2000.0;
};

// COCCL_TIMEOUT_MS of the ranks.
constexpr int kFaultTimeoutMs = 3000;

// Runs one seed on `nranks` ranks (2..8) and reports failures as gtest failures. Call it from
// a process with no other thread than gtest's.
void runFaultSeed(uint64_t seed, int nranks, const FaultRankSetup& setup);

// FAULT_SEED=<n> [FAULT_RANKS=<2..8>, default 4]: the replay test's body (skips without it).
void runFaultSeedFromEnvironment(const FaultRankSetup& setup);

}  // namespace coccl::test
