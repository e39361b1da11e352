// Queries at the C boundary: the communicator's codec choice for a call (its own CodecPolicy,
// the one the collectives use), the values of coccl's environment rows, and the device
// kernels' phase times.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "api/api_internal.h"
#include "core/dtype.h"
#include "core/env.h"

using namespace coccl;

namespace {

// Copies `s` with its NUL into out[0, len).
void copyOut(const std::string& s, char* out, size_t len, const char* what) {
  COCCL_CHECK_ARG(s.size() < len, "%s is %zu bytes long: needs %zu bytes with its NUL, got %zu",
                  what, s.size(), s.size() + 1, len);
  std::memcpy(out, s.c_str(), s.size() + 1);
}

// The policy's choice for a call as the collectives ask it (argument checks included).
CodecPolicy::Choice queryChoice(cocclComm_t comm, cocclCollKind_t coll, size_t count,
                                cocclDataType_t datatype, cocclRedOp_t op) {
  COCCL_CHECK_ARG(comm->impl != nullptr, "comm is not initialised");  // live: callers' CommUse
  const int k = static_cast<int>(coll);
  COCCL_CHECK_ARG(k >= 0 && k < cocclNumCollKinds, "invalid collective kind %d (valid: 0..%d)", k,
                  cocclNumCollKinds - 1);
  COCCL_CHECK_ARG(dtypeValid(datatype), "invalid data type %d (valid: 0..%d)",
                  static_cast<int>(datatype), cocclNumTypes - 1);
  // As cocclAllGather / cocclSend ask the policy (the op is not theirs).
  if (coll == cocclCollAllGather || coll == cocclCollSendRecv) op = cocclSum;
  COCCL_CHECK_ARG(static_cast<int>(op) >= 0 && op < cocclNumOps,
                  "invalid reduction op %d (valid: 0..%d)", static_cast<int>(op), cocclNumOps - 1);
  const Communicator& c = *comm->impl;
  // The bytes the collectives hand the policy: the whole message (all ranks' blocks for
  // ReduceScatter and AllGather).
  const size_t ranks =
      coll == cocclCollAllReduce || coll == cocclCollSendRecv ? 1 : static_cast<size_t>(c.nranks());
  const size_t es = dtypeSize(datatype);
  COCCL_CHECK_ARG(count <= SIZE_MAX / ranks / es, "count %zu x %zu ranks overflows", count, ranks);
  const CollKind kind = coll == cocclCollAllReduce       ? CollKind::AllReduce
                        : coll == cocclCollReduceScatter ? CollKind::ReduceScatter
                        : coll == cocclCollAllGather     ? CollKind::AllGather
                                                         : CollKind::Send;
  if (count == 0) return CodecPolicy::Choice{};
  const size_t bytes = count * ranks * es;
  if (kind != CollKind::Send) return c.policy().choose(kind, datatype, op, bytes, count, nullptr);
  // Send/Recv: compressed when the messages of either direction are (rules may take one
  // direction: the NCCL shim then routes both to coccl, which runs the other one exact); the
  // answer is the same on every rank.
  const CodecPolicy::Choice up = c.policy().choose(kind, datatype, op, bytes, count, nullptr,
                                                   CodecPolicy::kNoCallNo, P2PDir::Up);
  if (up.codec) return up;
  return c.policy().choose(kind, datatype, op, bytes, count, nullptr, CodecPolicy::kNoCallNo,
                           P2PDir::Down);
}

}  // namespace

extern "C" {

COCCL_API cocclResult_t cocclCommQueryCodec(cocclComm_t comm, cocclCollKind_t coll, size_t count,
                                            cocclDataType_t datatype, cocclRedOp_t op,
                                            int* compressed, char* codecName,
                                            size_t codecNameLen) {
  return guarded(nullptr, "cocclCommQueryCodec", [&] {
    COCCL_CHECK_ARG(comm && compressed, "comm or compressed is NULL");
    CommUse use(comm);  // queryChoice's codec lives in the communicator
    const Codec* codec = queryChoice(comm, coll, count, datatype, op).codec;
    if (codecName) copyOut(codec ? codec->spec() : std::string("none"), codecName, codecNameLen,
                           "the codec name");
    *compressed = codec ? 1 : 0;
  });
}

COCCL_API cocclResult_t cocclCommQueryExactPath(cocclComm_t comm, cocclCollKind_t coll,
                                                size_t count, cocclDataType_t datatype,
                                                cocclRedOp_t op, cocclExactPath_t* path) {
  return guarded(nullptr, "cocclCommQueryExactPath", [&] {
    COCCL_CHECK_ARG(comm && path, "comm or path is NULL");
    CommUse use(comm);  // queryChoice's codec lives in the communicator
    const CodecPolicy::Choice ch = queryChoice(comm, coll, count, datatype, op);
    *path = ch.codec || coll == cocclCollSendRecv ? cocclExactDefault
                                                  : static_cast<cocclExactPath_t>(ch.exact);
  });
}

COCCL_API cocclResult_t cocclCommQueryAllGatherDelta(cocclComm_t comm, size_t sendcount,
                                                     cocclDataType_t datatype, int* delta) {
  return guarded(nullptr, "cocclCommQueryAllGatherDelta", [&] {
    COCCL_CHECK_ARG(comm && delta, "comm or delta is NULL");
    CommUse use(comm);  // queryChoice's codec lives in the communicator
    const CodecPolicy::Choice ch =
        queryChoice(comm, cocclCollAllGather, sendcount, datatype, cocclSum);
    *delta = ch.codec && ch.delta ? 1 : 0;
  });
}

COCCL_API cocclResult_t cocclCommWorldRanks(cocclComm_t comm, int* worldRanks, int nranks) {
  return guarded(nullptr, "cocclCommWorldRanks", [&] {
    COCCL_CHECK_ARG(comm && worldRanks, "comm or worldRanks is NULL");
    CommUse use(comm);
    COCCL_CHECK_ARG(comm->impl != nullptr, "comm is not initialised");
    const std::vector<int>& w = comm->impl->worldRanks();
    COCCL_CHECK_ARG(nranks == static_cast<int>(w.size()),
                    "nranks %d is not the communicator's size %zu", nranks, w.size());
    std::copy(w.begin(), w.end(), worldRanks);
  });
}

COCCL_API cocclResult_t cocclGetEnvValue(const char* name, char* value, size_t valueLen,
                                         int* isSet) {
  return guarded(nullptr, "cocclGetEnvValue", [&] {
    COCCL_CHECK_ARG(name && value, "name or value is NULL");
    const EnvRow* row = findEnvRow(name);
    COCCL_CHECK_ARG(row, "%s is not a variable coccl reads (README \"Environment\")", name);
    copyOut(envValueText(*row), value, valueLen, name);
    if (isSet) *isSet = envIsSet(*row) ? 1 : 0;
  });
}

}  // extern "C"

COCCL_API cocclResult_t cocclCommGetPhaseTimes(cocclComm_t comm, cocclPhaseTimes_t* times) {
  return guarded(comm, "cocclCommGetPhaseTimes", [&] {
    Communicator& c = usableComm(comm);
    COCCL_CHECK_ARG(times, "times is NULL");
    std::vector<uint64_t> w;
    COCCL_CHECK_USAGE(c.phaseTimes(&w),
                      "no phase times: they need COCCL_PHASE_TIMES=1 at init and a communicator "
                      "on the CUDA IPC path (device buffers of ranks on one host)");
    static_assert(cocclNumPhases == 8, "cocclPhase_t follows dev_types.h PhaseWord");
    *times = cocclPhaseTimes_t{};
    for (int i = 0; i < cocclNumPhases; ++i) times->ns[i] = w[static_cast<size_t>(i)];
    times->blockRuns = w[cocclNumPhases];
    times->rounds = w[cocclNumPhases + 1];
  });
}
