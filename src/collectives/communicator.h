// A communicator: this rank's view of a group of ranks. Owns the bootstrap, the transport, the
// codec policy, the staging-buffer pool, tag sequence numbers and the error state.
// One thread at a time runs operations on a communicator (as with NCCL); abort() and
// asyncError() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/buffer_pool.h"
#include "collectives/device/device_comm.h"
#include "collectives/policy.h"
#include "core/bootstrap.h"
#include "core/env.h"
#include "core/topology.h"
#include "transport/transport.h"

namespace coccl {

struct CommConfig {
  int64_t timeoutMs = env_default::timeoutMs;
  int64_t chunkBytes = env_default::chunkBytes;
  std::string algo = env_default::algo;  // auto | two-shot (= direct) | ring
  int ringMinRanks = static_cast<int>(env_default::ringMinRanks);
  std::string name;
  std::string deviceExact = env_default::deviceExact;  // auto | coccl | nccl (COCCL_DEVICE_EXACT)
  PolicyConfig policy;
  // CUDA device current on the thread that called cocclCommInitRank (-1: none / CUDA not in use
  // by the process); the device path uses it (deferred group inits run on other threads).
  int cudaDevice = -1;
};

// Statistics of the last collective (for perf tools).
struct CollStats {
  size_t logicalBytes = 0;
  size_t wireBytesSent = 0;
  const char* codec = "none";
  const char* algorithm = "";
};

// Tag layout inside the transport's 48 bits: [kind:2][seq:22][sub:24].
enum class TagKind : uint64_t { Collective = 0, P2P = 1 };

class Communicator {
 public:
  Communicator(const BootstrapHandle& handle, int rank, int nranks, const CommConfig& cfg);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const CommConfig& config() const { return cfg_; }
  const CodecPolicy& policy() const { return policy_; }
  const CommTopology& topology() const { return topo_; }
  Bootstrap& bootstrap() { return *bootstrap_; }
  Transport& transport() { return *transport_; }
  Waiter& waiter() { return *waiter_; }
  BufferPool& pool() { return pool_; }
  CollStats& stats() { return stats_; }
  // The device path (CUDA builds; null in host-only builds). See device/device_comm.h.
  DeviceComm* device() { return device_.get(); }
  // The CUDA device of this rank, -1 when it has none (cocclCommCuDevice).
  int cudaDevice() const { return device_ ? device_->device() : -1; }

  // A fresh tag base for the next collective: [Collective][seq][0]; add a 24-bit sub-tag.
  uint64_t nextCollectiveTag();
  // Tag for the n-th message this rank sends to / receives from `peer` (matched in order).
  uint64_t nextSendTag(int peer);
  uint64_t nextRecvTag(int peer);

  // Error state. fail() records the error (first one wins) and closes the bootstrap so that
  // peers blocked on this rank fail fast instead of waiting for their timeout.
  void fail(cocclResult_t code);
  // The first error of a host operation, else one recorded by a device kernel.
  cocclResult_t asyncError() const;
  // Throws cocclInvalidUsage if the communicator is aborted or broken.
  void checkUsable() const;
  // From any thread: stop what is in flight (the running call throws promptly).
  void requestAbort();
  const std::atomic<bool>& abortFlag() const { return abort_; }

  // Waits for this rank's device work and its peers' consumption of it (device path), then a
  // barrier over the bootstrap (finalize).
  void finalize();

 private:
  int rank_;
  int nranks_;
  CommConfig cfg_;
  CodecPolicy policy_;
  std::unique_ptr<Bootstrap> bootstrap_;
  CommTopology topo_;
  BufferPool pool_;  // declared before the transport: destroyed after it
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Waiter> waiter_;
  std::atomic<bool> abort_{false};
  std::atomic<int> error_{cocclSuccess};
  uint64_t collSeq_ = 0;
  std::vector<uint64_t> sendSeq_, recvSeq_;
  CollStats stats_;
  std::unique_ptr<DeviceComm> device_;  // destroyed first (~Communicator): it uses the bootstrap
};

}  // namespace coccl
