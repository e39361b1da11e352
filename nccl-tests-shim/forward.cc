// Functions the shim forwards to the real NCCL as they are (with the communicator's real half):
// memory, buffer and window registration, user reduction ops (a PreMulSum op is never SUM/AVG,
// so collectives using it are forwarded too), and the device API's host functions.
#include "shim.h"

using namespace shim;

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  SHIM_FORWARD_NOCOMM(ncclMemAlloc, ptr, size)
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) { SHIM_FORWARD_NOCOMM(ncclMemFree, ptr) }

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle) {
  SHIM_FORWARD(ncclCommRegister, c->real, buff, size, handle)
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  SHIM_FORWARD(ncclCommDeregister, c->real, handle)
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
         ncclWindow_t* win, int winFlags) {
  SHIM_FORWARD(ncclCommWindowRegister, c->real, buff, size, win, winFlags)
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  SHIM_FORWARD(ncclCommWindowDeregister, c->real, win)
}

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
         ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  SHIM_FORWARD(ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, c->real)
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  SHIM_FORWARD(ncclRedOpDestroy, op, c->real)
}

// ---- device API (nccl_device/*.h): host functions ------------------------------------------
NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
         ncclDevComm_t* outDevComm) {
  SHIM_FORWARD(ncclDevCommCreate, c->real, reqs, outDevComm)
}

NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm) {
  SHIM_FORWARD(ncclDevCommDestroy, c->real, devComm)
}

NCCL_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team,
         int nBarriers, ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  SHIM_FORWARD(ncclGinBarrierCreateRequirement, c->real, team, nBarriers, outHandle, outReq)
}

NCCL_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
         ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  SHIM_FORWARD_NOCOMM(ncclLsaBarrierCreateRequirement, team, nBarriers, outHandle, outReq)
}

NCCL_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots,
         ncclLLA2AHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  SHIM_FORWARD_NOCOMM(ncclLLA2ACreateRequirement, nBlocks, nSlots, outHandle, outReq)
}

// The functions below return no ncclResult_t: on failure they return an empty team / -1, and
// ncclGetLastError says why.
NCCL_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize) {
  ncclResult_t code;
  const Real* rl = forwardTo(&Real::ncclLLA2ACalcSlots, "ncclLLA2ACalcSlots", nullptr, nullptr,
                             &code);
  return rl ? rl->ncclLLA2ACalcSlots(maxElts, maxEltSize) : -1;
}

#define SHIM_TEAM_FN(fn)                                          \
  NCCL_API(ncclTeam_t, fn, ncclComm_t comm) {                     \
    ncclComm* c;                                                  \
    ncclResult_t code;                                            \
    const Real* rl = forwardTo(&Real::fn, #fn, comm, &c, &code);  \
    return rl ? rl->fn(c->real) : ncclTeam_t{0, 0, 0};            \
  }
SHIM_TEAM_FN(ncclTeamWorld)
SHIM_TEAM_FN(ncclTeamLsa)
SHIM_TEAM_FN(ncclTeamRail)

#define SHIM_TEAM_RANK_FN(fn)                                      \
  NCCL_API(int, fn, ncclComm_t comm, ncclTeam_t team, int rank) {  \
    ncclComm* c;                                                   \
    ncclResult_t code;                                             \
    const Real* rl = forwardTo(&Real::fn, #fn, comm, &c, &code);   \
    return rl ? rl->fn(c->real, team, rank) : -1;                  \
  }
SHIM_TEAM_RANK_FN(ncclTeamRankToWorld)
SHIM_TEAM_RANK_FN(ncclTeamRankToLsa)
