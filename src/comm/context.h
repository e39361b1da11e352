// The communicator context: what every executor of a communicator shares - rank, world size,
// configuration, bootstrap, topology, and the error and abort state. It owns no executor and
// no codec policy (those are src/collectives/communicator.h's); executors receive a context and
// never reach back up to the communicator that owns them.
//
// Thread safety: one thread at a time runs operations on a communicator (as with NCCL);
// fail(), setAborted(), hostError() and aborted() may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "coccl.h"
#include "comm/config.h"
#include "core/bootstrap.h"
#include "core/topology.h"

namespace coccl {

class CommContext {
 public:
  // Collective: connects to the bootstrap root and gathers the topology (every rank, in order).
  CommContext(const BootstrapHandle& handle, int rank, int nranks, const CommConfig& cfg);
  CommContext(const CommContext&) = delete;
  CommContext& operator=(const CommContext&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const CommConfig& config() const { return cfg_; }
  Bootstrap& bootstrap() { return *bootstrap_; }
  const Bootstrap& bootstrap() const { return *bootstrap_; }
  const CommTopology& topology() const { return topo_; }
  // L of the two-level (hierarchical) collectives: rank r is local rank r % L of node r / L.
  // COCCL_RANKS_PER_NODE when set (init fails unless it divides nranks); else the ranks per
  // host when every host holds the same number of consecutive ranks; else nranks (one level).
  int ranksPerNode() const { return ranksPerNode_; }

  // Records an error of a host operation (first one wins) and closes the bootstrap so that
  // peers blocked on this rank fail fast instead of waiting for their timeout.
  // `what`: its message (the first error's is kept for hostErrorMessage).
  void fail(cocclResult_t code, const std::string& what = "");
  // The first error fail() recorded, else cocclSuccess; and its message ("" if none was given).
  cocclResult_t hostError() const { return static_cast<cocclResult_t>(error_.load()); }
  std::string hostErrorMessage() const;
  // Raises the abort flag (calls in flight see it and throw). The communicator then aborts its
  // executors and closes the bootstrap (Communicator::requestAbort).
  void setAborted() { abort_.store(true, std::memory_order_release); }
  bool aborted() const { return abort_.load(std::memory_order_acquire); }
  const std::atomic<bool>& abortFlag() const { return abort_; }

 private:
  int resolveRanksPerNode() const;
  int rank_;
  int nranks_;
  CommConfig cfg_;
  std::unique_ptr<Bootstrap> bootstrap_;
  CommTopology topo_;
  int ranksPerNode_ = 1;
  std::atomic<bool> abort_{false};
  std::atomic<int> error_{cocclSuccess};
  mutable std::mutex errorMu_;
  std::string errorMessage_;  // of the first fail(), under errorMu_
};

}  // namespace coccl
