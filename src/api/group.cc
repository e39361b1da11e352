// cocclGroupStart / cocclGroupEnd: per-thread queue of operations run together at the
// outermost GroupEnd. Deferred inits run concurrently (one thread each), then each
// communicator's operations run in order: consecutive sends/receives are posted together
// (so exchange patterns cannot deadlock) and collectives run in turn. Several communicators
// driven by one thread run concurrently, one thread each (the caller's and pooled workers that
// later groups reuse), as their ranks must progress together.
#include <exception>
#include <vector>

#include "api/api_internal.h"
#include "core/worker_pool.h"

using namespace coccl;

namespace {

thread_local int t_depth = 0;
thread_local std::vector<QueuedOp> t_queue;

cocclResult_t runCommOps(cocclComm* comm, const std::vector<QueuedOp*>& ops) {
  return guarded(comm, "cocclGroupEnd", [&] {
    Communicator& c = usableComm(comm);
    // A codec handle of a queued Send/Recv destroyed since: an error before anything runs (the
    // collectives check theirs when they run).
    for (const QueuedOp* op : ops)
      if (op->isP2P && op->p2pCodec) checkLiveCodec(op->p2pCodec);
    std::lock_guard<std::mutex> lock(comm->opMutex);
    // Every part runs even after one failed while the communicator stays usable: a Send/Recv
    // pair that disagreed fails its group's P2P part, and the collectives queued behind it
    // (whose call numbers are taken) must still meet their peers' calls, or the ranks fall out
    // of step. A communication failure (a timeout, a peer lost) breaks the communicator at
    // once and stops the group: the parts left would each wait out their own timeout. The first
    // error is the group's.
    std::exception_ptr first;
    bool stop = false;
    auto attempt = [&](auto&& part) {
      if (stop) return;
      if (first) {
        try {
          c.checkUsable();
        } catch (...) {
          stop = true;  // broken or aborted: what is left cannot run
          return;
        }
      }
      try {
        part();
      } catch (const Error& e) {
        if (!first) first = std::current_exception();
        if (isCommunicationError(e.code())) {
          c.fail(e.code(), std::string("cocclGroupEnd: ") + e.what());
          stop = true;
        }
      } catch (...) {
        if (!first) first = std::current_exception();
        stop = true;
      }
    };
    std::vector<CollRequest> batch;
    auto flush = [&] {
      if (!batch.empty()) attempt([&] { c.runP2P(batch); });
      batch.clear();
    };
    for (QueuedOp* op : ops) {
      if (op->isP2P) {
        batch.push_back(op->p2p);
      } else {
        flush();
        attempt([&] { op->run(); });
      }
    }
    flush();
    if (first) std::rethrow_exception(first);
  });
}

// Runs the jobs together, each on its own thread when there is more than one (the caller's and
// the process's worker pool: core/worker_pool.h); returns the first error.
cocclResult_t runConcurrently(std::vector<std::function<cocclResult_t()>>& jobs) {
  if (jobs.size() == 1) return jobs[0]();
  std::vector<cocclResult_t> results(jobs.size(), cocclSuccess);
  std::vector<std::function<void()>> wrapped;
  wrapped.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i)
    wrapped.emplace_back([&, i] { results[i] = jobs[i](); });  // jobs are guarded: no throw
  cocclResult_t r =
      guarded(nullptr, "cocclGroupEnd", [&] { runTogether(wrapped.data(), wrapped.size()); });
  if (r != cocclSuccess) return r;  // no worker thread could be created: nothing ran
  for (cocclResult_t x : results)
    if (x != cocclSuccess) return x;
  return cocclSuccess;
}

}  // namespace

namespace coccl {

bool inGroup() { return t_depth > 0; }

void enqueue(QueuedOp op) { t_queue.push_back(std::move(op)); }

}  // namespace coccl

extern "C" {

COCCL_API cocclResult_t cocclGroupStart(void) {
  ++t_depth;
  return cocclSuccess;
}

COCCL_API cocclResult_t cocclGroupEnd(void) {
  if (t_depth == 0)
    return reportError(nullptr, "cocclGroupEnd", cocclInvalidUsage,
                       "cocclGroupEnd without a matching cocclGroupStart");
  if (--t_depth > 0) return cocclSuccess;
  std::vector<QueuedOp> queue;
  queue.swap(t_queue);
  if (queue.empty()) return cocclSuccess;

  // 1. Deferred communicator inits, concurrently.
  std::vector<std::function<cocclResult_t()>> inits;
  for (QueuedOp& op : queue)
    if (!op.comm) inits.push_back([&op] { return guarded(nullptr, "cocclCommInitRank", op.run); });
  if (!inits.empty()) {
    cocclResult_t r = runConcurrently(inits);
    if (r != cocclSuccess) return r;
  }
  // 2. Operations per communicator, in posting order.
  std::vector<cocclComm*> comms;
  std::vector<std::vector<QueuedOp*>> perComm;
  for (QueuedOp& op : queue) {
    if (!op.comm) continue;
    size_t i = 0;
    while (i < comms.size() && comms[i] != op.comm) ++i;
    if (i == comms.size()) {
      comms.push_back(op.comm);
      perComm.emplace_back();
    }
    perComm[i].push_back(&op);
  }
  if (comms.empty()) return cocclSuccess;
  std::vector<std::function<cocclResult_t()>> jobs;
  for (size_t i = 0; i < comms.size(); ++i)
    jobs.push_back([&, i] { return runCommOps(comms[i], perComm[i]); });
  return runConcurrently(jobs);
}

}  // extern "C"
