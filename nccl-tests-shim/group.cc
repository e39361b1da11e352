// ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd. Per calling thread, nesting. The
// outermost start opens a group of the real NCCL, into which the forwarded calls go as they
// come; compressed collectives wait in the shim's queue. The outermost end then
//   1. ends the real group (or, for ncclGroupSimulateEnd, replays the queued compressed calls
//      into it and lets the real NCCL simulate it: nothing runs, as NCCL's contract says),
//   2. creates the communicators whose init/split was called inside the group (concurrently,
//      one thread each on its device, when there are several: nccl-tests inits its GPUs so),
//   3. runs the queued compressed calls inside one coccl group, then the queued
//      weight-difference AllGathers (delta.cc), a thread per communicator when there are several.
// Every rank ends its groups in this order, so the two libraries never wait on each other.
#include <algorithm>
#include <thread>

#include "shim.h"

namespace shim {
namespace {

struct Deferred {
  ncclComm* comm;
  int device;
  std::function<ncclResult_t()> run;
};

struct GroupState {
  int depth = 0;
  bool realOpen = false;
  std::vector<Deferred> inits;
  std::vector<CollOp> ops;
};
thread_local GroupState t_group;

ncclResult_t runInits(std::vector<Deferred>& inits) {
  if (inits.empty()) return ncclSuccess;
  std::vector<ncclResult_t> rs(inits.size(), ncclSuccess);
  if (inits.size() == 1 && inits[0].device == currentDevice()) {
    rs[0] = inits[0].run();
  } else {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < inits.size(); ++i)
      threads.emplace_back([&inits, &rs, i] {
        rs[i] = setDevice(inits[i].device)
                    ? inits[i].run()
                    : fail(ncclUnhandledCudaError, "ncclGroupEnd: cannot use CUDA device %d",
                           inits[i].device);
      });
    for (auto& t : threads) t.join();
  }
  ncclResult_t first = ncclSuccess;
  for (size_t i = 0; i < inits.size(); ++i) {
    if (rs[i] != ncclSuccess && inits[i].comm) releaseComm(inits[i].comm);
    finishInit(inits[i].comm, rs[i]);
    if (first == ncclSuccess) first = rs[i];
  }
  return first;
}

// The weight-difference AllGathers of a group (delta.cc): each blocks its thread until every
// rank of its communicator has posted it, so the calls of each communicator run on a thread of
// their own (one thread may drive several ranks, and ranks may queue communicators in other
// orders), one after another in the order queued.
ncclResult_t runDeltaOps(const std::vector<CollOp>& deltas) {
  std::vector<ncclComm*> comms;
  for (const CollOp& op : deltas)
    if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
  std::vector<ncclResult_t> rs(comms.size(), ncclSuccess);
  auto runComm = [&](size_t k) {
    for (const CollOp& op : deltas)
      if (op.comm == comms[k]) {
        ncclResult_t r = runCoccl(op);
        if (rs[k] == ncclSuccess) rs[k] = r;
      }
  };
  if (comms.size() == 1) {
    runComm(0);
  } else {
    const int dev = currentDevice();
    std::vector<std::thread> threads;
    for (size_t k = 0; k < comms.size(); ++k)
      threads.emplace_back([&, k] {
        const int d = comms[k]->cudaDev >= 0 ? comms[k]->cudaDev : dev;
        if (!setDevice(d)) {
          rs[k] = fail(ncclUnhandledCudaError, "ncclGroupEnd: cannot set device %d", d);
          return;
        }
        runComm(k);
      });
    for (auto& t : threads) t.join();
  }
  for (ncclResult_t r : rs)
    if (r != ncclSuccess) return r;
  return ncclSuccess;
}

// The queued calls in one coccl group; then the weight-difference AllGathers (runDeltaOps:
// each copies its reference to recvbuff after its gather, which cannot be inside a coccl group,
// which runs the gather at its end). Every rank runs them in the same order.
ncclResult_t runCocclOps(const std::vector<CollOp>& all) {
  std::vector<CollOp> ops, deltas;
  for (const CollOp& op : all) (op.delta ? deltas : ops).push_back(op);
  ncclResult_t first = ncclSuccess;
  if (ops.size() == 1) {
    first = runCoccl(ops[0]);
  } else if (!ops.empty()) {
    first = fromCoccl(cocclGroupStart(), "ncclGroupEnd");
    if (first == ncclSuccess) {
      for (const CollOp& op : ops) {
        ncclResult_t r = runCoccl(op);
        if (first == ncclSuccess) first = r;
      }
      ncclResult_t r = fromCoccl(cocclGroupEnd(), "ncclGroupEnd");
      if (first == ncclSuccess) first = r;
    }
  }
  ncclResult_t r = deltas.empty() ? ncclSuccess : runDeltaOps(deltas);
  return first != ncclSuccess ? first : r;
}

ncclResult_t endGroup(ncclSimInfo_t* simInfo, const char* fn) {
  if (t_group.depth == 0) return fail(ncclInvalidUsage, "%s without a matching ncclGroupStart", fn);
  if (--t_group.depth > 0) return ncclSuccess;
  std::vector<Deferred> inits;
  std::vector<CollOp> ops;
  inits.swap(t_group.inits);
  ops.swap(t_group.ops);
  bool realOpen = t_group.realOpen;
  t_group.realOpen = false;
  const Real* rl = realOpen ? real() : nullptr;

  ncclResult_t r = ncclSuccess;
  if (simInfo) {
    if (rl) {
      for (const CollOp& op : ops)
        if (op.comm->real) runReal(op);
      r = fromReal(rl->ncclGroupSimulateEnd ? rl->ncclGroupSimulateEnd(simInfo)
                                            : rl->ncclGroupEnd());
    }
    ops.clear();  // a simulation runs nothing
  } else if (rl) {
    r = fromReal(rl->ncclGroupEnd());
  }
  ncclResult_t ri = runInits(inits);
  ncclResult_t rc = runCocclOps(ops);
  for (ncclResult_t x : {r, ri, rc})
    if (x != ncclSuccess && x != ncclInProgress) return x;
  return r;  // ncclSuccess, or ncclInProgress from a non-blocking real communicator
}

}  // namespace

bool inGroup() { return t_group.depth > 0; }

void deferInit(ncclComm* c, int device, std::function<ncclResult_t()> run) {
  t_group.inits.push_back(Deferred{c, device, std::move(run)});
}

void queueCoccl(const CollOp& op) { t_group.ops.push_back(op); }

}  // namespace shim

using namespace shim;

NCCL_API(ncclResult_t, ncclGroupStart, void) {
  if (t_group.depth == 0) {
    const Real* rl = env().noNccl ? nullptr : real();
    if (rl) {
      ncclResult_t r = fromReal(rl->ncclGroupStart());
      if (r != ncclSuccess) return r;
      t_group.realOpen = true;
    }
  }
  ++t_group.depth;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd, void) { return endGroup(nullptr, "ncclGroupEnd"); }

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  if (!simInfo) return fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
  return endGroup(simInfo, "ncclGroupSimulateEnd");
}
