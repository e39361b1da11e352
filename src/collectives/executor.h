// An executor runs calls on one kind of memory over one mechanism: the host executor (host
// buffers, UCX), the CUDA IPC executor (device buffers of the ranks of one host, coccl's
// kernels), the NCCL executor (device buffers anywhere, through the real NCCL). A communicator
// holds an ordered list of them (src/collectives/communicator.h); the first whose supports()
// accepts a request runs it. That list and supports() are the whole routing rule.
//
// Life cycle: an executor is made at communicator init by its probe (a collective over the
// bootstrap that every rank runs; it either comes up on every rank or on none, with the same
// reason), receives the CommContext and never reaches back up to the communicator.
//
// How to add one: implement this interface in src/collectives/<name>/, write a probe that
// returns it or a reason (use agree() / agreeValues() from core/agree.h so every rank decides
// alike), and insert it in the list built by Communicator's constructor at the place its
// supports() should be asked. Set stats.algorithm and stats.wireBytesSent in run(); the router
// fills logicalBytes and codec.
#pragma once

#include <string>
#include <vector>

#include "coccl.h"
#include "collectives/request.h"
#include "collectives/stats.h"

namespace coccl {

class Executor {
 public:
  virtual ~Executor() = default;

  virtual const char* name() const = 0;  // "host", "cuda_ipc", "nccl"
  // Whether this executor runs `r` as it is (memory kind, codec, type, group size...). Cheap,
  // called on every call; must not throw.
  virtual bool supports(const CollRequest& r) const = 0;
  // Runs one collective (r.coll not Send/Recv). Host memory: returns when the output is ready.
  // Device memory: enqueued on r.stream. Throws coccl::Error.
  virtual void run(const CollRequest& r, CollStats& stats) = 0;
  // Runs every Send and Recv of a group together (no ordering deadlocks).
  virtual void runP2P(const std::vector<CollRequest>& group, CollStats& stats) = 0;

  // cocclSuccess, or an error raised asynchronously (device work). Cheap, any thread.
  virtual cocclResult_t asyncError() const { return cocclSuccess; }
  // What asyncError() is about when the executor knows more (a disagreeing call), else "".
  virtual std::string asyncErrorMessage() const { return ""; }
  // Any thread: work in flight stops and peers waiting on this rank are released. No waiting.
  virtual void abort() {}
  // Waits until this rank's work is done and consumed by its peers (finalize / destroy).
  virtual void quiesce() {}
  // The CUDA device whose buffers this executor takes, -1 for host executors.
  virtual int cudaDevice() const { return -1; }
  // COCCL_PHASE_TIMES: the counters of its collective kernels' phases, summed over their blocks
  // (collectives/cuda_ipc/dev_types.h PhaseWord order: kPhases times in ns, the blocks' kernels,
  // their rounds) into `words`; false when this executor keeps none. Synchronous (a copy from
  // the device); the caller's kernels should have finished.
  virtual bool phaseTimes(std::vector<uint64_t>* words) const {
    (void)words;
    return false;
  }
};

}  // namespace coccl
