// ncclCommSplit and ncclCommShrink. The coccl half of the child is made over the parent's coccl
// communicator (host buffers, so coccl's host path): the ranks learn the groups, each group's
// new rank 0 makes a coccl unique id and hands it to its members. The real half is the real
// NCCL's own split / shrink of the parent's real communicator, which every parent rank calls
// even when its coccl half failed, so that no rank is left waiting inside NCCL.
#include <algorithm>
#include <cstring>
#include <memory>

#include "shim.h"

namespace shim {
namespace {

struct IdMsg {
  int32_t status;
  cocclUniqueId id;
};

// This rank's world rank in the parent (what the child's coccl half is created with, so that
// the policy file's "members" and "stride" see world ranks, not the parent's ranks); -1 when
// coccl cannot say.
int parentWorldRank(const ncclComm* parent) {
  std::vector<int> w(static_cast<size_t>(parent->nranks), -1);
  if (cocclCommWorldRanks(parent->coccl, w.data(), parent->nranks) != cocclSuccess) return -1;
  return w[static_cast<size_t>(parent->rank)];
}

// The real half of a split/shrink child (and nothing for a rank outside every child).
ncclResult_t realChild(ncclComm* child, ncclResult_t r, const std::function<ncclResult_t(ncclComm_t*)>& call) {
  const Real* rl = real();
  if (!rl || env().noNccl) return r;
  ncclComm_t rc = nullptr;
  ncclResult_t rr = fromReal(call(&rc));
  if (rr == ncclInProgress && rc) rr = fromReal(waitReal(rl, rc));
  if (child) child->real = rc;
  if (r != ncclSuccess) return r;
  if (rr != ncclSuccess) return rr;
  int dev = -1;
  if (child && rc && rl->ncclCommCuDevice && rl->ncclCommCuDevice(rc, &dev) == ncclSuccess)
    child->cudaDev = dev;
  return ncclSuccess;
}

ncclResult_t splitImpl(ncclComm* parent, int color, int key, ncclComm* child) {
  const int n = parent->nranks, me = parent->rank;
  std::vector<int32_t> ck(2 * static_cast<size_t>(n));
  int32_t mine[2] = {color, key};
  ncclResult_t r = fromCoccl(cocclAllGather(mine, ck.data(), 2, cocclInt32, parent->coccl, nullptr),
                             "ncclCommSplit");
  // Members of my color in (key, parent rank) order: the first is the leader.
  std::vector<int> members;
  for (int i = 0; r == ncclSuccess && i < n; ++i)
    if (color != NCCL_SPLIT_NOCOLOR && ck[2 * i] == color) members.push_back(i);
  std::sort(members.begin(), members.end(), [&](int a, int b) {
    return ck[2 * a + 1] != ck[2 * b + 1] ? ck[2 * a + 1] < ck[2 * b + 1] : a < b;
  });
  IdMsg msg;
  std::memset(&msg, 0, sizeof(msg));
  if (!members.empty() && members[0] == me) msg.status = cocclGetUniqueId(&msg.id);
  std::vector<IdMsg> all(static_cast<size_t>(n));
  if (r == ncclSuccess)
    r = fromCoccl(cocclAllGather(&msg, all.data(), sizeof(IdMsg), cocclUint8, parent->coccl, nullptr),
                  "ncclCommSplit");
  if (r == ncclSuccess && child) {
    child->nranks = static_cast<int>(members.size());
    child->rank = static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
    const IdMsg& lead = all[static_cast<size_t>(members[0])];
    child->worldRank = parentWorldRank(parent);
    r = lead.status != cocclSuccess
            ? fail(static_cast<ncclResult_t>(lead.status), "ncclCommSplit: no unique id on rank %d",
                   members[0])
            : initCoccl(child, lead.id);
  }
  ncclConfig_t* cfg = child ? child->config.get() : nullptr;
  return realChild(child, r, [&](ncclComm_t* rc) {
    return real()->ncclCommSplit(parent->real, color, key, rc, cfg);
  });
}

ncclResult_t shrinkImpl(ncclComm* parent, std::vector<int> exclude, int flags, ncclComm* child) {
  const int n = parent->nranks, me = parent->rank;
  std::vector<int> members;
  for (int i = 0; i < n; ++i)
    if (std::find(exclude.begin(), exclude.end(), i) == exclude.end()) members.push_back(i);
  child->nranks = static_cast<int>(members.size());
  child->rank = static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
  // The excluded ranks may be dead: only the members talk, leader to each member.
  IdMsg msg;
  std::memset(&msg, 0, sizeof(msg));
  ncclResult_t r = ncclSuccess;
  if (members[0] == me) {
    msg.status = cocclGetUniqueId(&msg.id);
    cocclResult_t cr = cocclGroupStart();
    for (size_t i = 1; i < members.size(); ++i) {
      cocclResult_t s = cocclSend(&msg, sizeof(msg), cocclUint8, members[i], parent->coccl, nullptr);
      if (cr == cocclSuccess) cr = s;
    }
    cocclResult_t e = cocclGroupEnd();
    r = fromCoccl(cr != cocclSuccess ? cr : e, "ncclCommShrink");
  } else {
    r = fromCoccl(cocclRecv(&msg, sizeof(msg), cocclUint8, members[0], parent->coccl, nullptr),
                  "ncclCommShrink");
  }
  child->worldRank = parentWorldRank(parent);
  if (r == ncclSuccess)
    r = msg.status != cocclSuccess ? fail(static_cast<ncclResult_t>(msg.status),
                                          "ncclCommShrink: no unique id on rank %d", members[0])
                                   : initCoccl(child, msg.id);
  ncclConfig_t* cfg = child->config.get();
  return realChild(child, r, [&](ncclComm_t* rc) {
    return real()->ncclCommShrink(parent->real, exclude.data(), static_cast<int>(exclude.size()),
                                  rc, cfg, flags);
  });
}

// Runs `impl` now, or at the outermost ncclGroupEnd inside a group.
ncclResult_t start(ncclComm* parent, std::unique_ptr<ncclComm> child, ncclComm_t* newcomm,
                   std::function<ncclResult_t(ncclComm*)> impl) {
  ncclComm* raw = child.get();
  if (raw) raw->asyncError = ncclInProgress;
  if (inGroup()) {
    deferInit(raw, currentDevice(), [impl, raw] { return impl(raw); });
    *newcomm = child.release();
    return ncclSuccess;
  }
  ncclResult_t r = impl(raw);
  if (r != ncclSuccess) {
    if (raw) releaseComm(raw);
    return r;
  }
  finishInit(raw, ncclSuccess);
  *newcomm = child.release();
  return ncclSuccess;
}

// A child's config: the caller's, else (as NCCL does) the parent's.
ncclResult_t childConfig(ncclComm* parent, ncclComm* child, ncclConfig_t* config) {
  if (!config) {
    child->config = parent->config;
    return ncclSuccess;
  }
  return child->config.set(config);
}

}  // namespace
}  // namespace shim

using namespace shim;

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  if (!newcomm) return fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  *newcomm = nullptr;
  ncclResult_t code;
  ncclComm* parent = usable(comm, "ncclCommSplit", &code);
  if (!parent) return code;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return fail(ncclInvalidArgument, "ncclCommSplit: color %d is negative", color);
  std::unique_ptr<ncclComm> child;
  if (color != NCCL_SPLIT_NOCOLOR) {
    child = std::make_unique<ncclComm>();
    ncclResult_t r = childConfig(parent, child.get(), config);
    if (r != ncclSuccess) return r;
  }
  return start(parent, std::move(child), newcomm, [parent, color, key](ncclComm* c) {
    return splitImpl(parent, color, key, c);
  });
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  if (!newcomm) return fail(ncclInvalidArgument, "ncclCommShrink: newcomm is NULL");
  *newcomm = nullptr;
  if (!comm || comm->magic != kCommMagic || !comm->ready.load())
    return fail(ncclInvalidArgument, "ncclCommShrink: comm is NULL, dead or not initialised");
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList))
    return fail(ncclInvalidArgument, "ncclCommShrink: bad exclude list (%d ranks)",
                excludeRanksCount);
  std::vector<int> exclude(excludeRanksList, excludeRanksList + excludeRanksCount);
  for (int r : exclude)
    if (r < 0 || r >= comm->nranks)
      return fail(ncclInvalidArgument, "ncclCommShrink: excluded rank %d is outside [0, %d)", r,
                  comm->nranks);
  if (std::find(exclude.begin(), exclude.end(), comm->rank) != exclude.end())
    return ncclSuccess;  // this rank leaves: no new communicator
  if (static_cast<int>(exclude.size()) >= comm->nranks)
    return fail(ncclInvalidArgument, "ncclCommShrink: every rank is excluded");
  auto child = std::make_unique<ncclComm>();
  ncclResult_t r = childConfig(comm, child.get(), config);
  if (r != ncclSuccess) return r;
  ncclComm* parent = comm;
  return start(parent, std::move(child), newcomm, [parent, exclude, shrinkFlags](ncclComm* c) {
    return shrinkImpl(parent, exclude, shrinkFlags, c);
  });
}
