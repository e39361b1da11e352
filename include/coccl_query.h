/*
 * coccl's queries: what a communicator would do for a call (for tools and the libnccl.so.2
 * shim, which keeps no copy of the policy or of the environment table), the environment table,
 * the last collective's statistics. Part of coccl.h, which includes it; it can be included on
 * its own too (it includes coccl.h). Conventions (units, errors) as coccl.h says.
 */
#ifndef COCCL_QUERY_H_
#define COCCL_QUERY_H_

#include "coccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Queries: what coccl would do (for tools and the libnccl.so.2 shim, which keeps no copy of the
 * policy or of the environment table).
 * ------------------------------------------------------------------------------------------- */

/* The collectives that may be compressed. */
typedef enum COCCL_ENUM_INT {
  cocclCollAllReduce = 0,
  cocclCollReduceScatter = 1,
  cocclCollAllGather = 2,
  cocclCollSendRecv = 3, /* cocclSend and cocclRecv (one policy entry for both ends) */
  cocclNumCollKinds = 4
} cocclCollKind_t;

/* Whether `comm` compresses the call cocclAllReduce / cocclReduceScatter / cocclAllGather /
 * cocclSend and cocclRecv (`coll`) with these arguments under its own codec policy (the first
 * matching rule of its policy file, docs/policy.md; else its config's codec fields, else
 * COCCL_CODEC_<COLL> / COCCL_CODEC (SendRecv: COCCL_CODEC_SENDRECV only) with compressMinBytes,
 * else COCCL_COMPRESS_MIN_BYTES; the op and the data type), and with which codec. `count` is the call's own count argument (AllReduce:
 * count; ReduceScatter: recvcount; AllGather: sendcount; Send/Recv: count); `op` is not looked
 * at for AllGather and SendRecv (COCCL_CODEC_SENDRECV). SendRecv: compressed when the messages
 * of either direction are (a policy rule may take the messages to higher ranks or to lower ones
 * alone: its "direction"), the codec of the upward ones first.
 * Writes *compressed (1 or 0) and, when codecName is not NULL, the codec's canonical spec
 * ("none" when uncompressed) with its NUL into codecName[0, codecNameLen). Count 0 is never
 * compressed (such a call does nothing). The buffers are not part of the question: device
 * buffers while the device path is off fail the call itself (cocclInvalidUsage). Does not
 * communicate and may be called from any thread while the communicator is alive.
 * Errors: cocclInvalidArgument (comm, or compressed, NULL; comm not initialised; an invalid
 * coll, datatype or op; count x element size (x ranks) overflowing; codecNameLen too small for
 * the name and its NUL: the message gives the size needed). */
COCCL_API cocclResult_t cocclCommQueryCodec(cocclComm_t comm, cocclCollKind_t coll, size_t count,
                                            cocclDataType_t datatype, cocclRedOp_t op,
                                            int* compressed, char* codecName,
                                            size_t codecNameLen);

/* Who runs a collective that `comm` leaves uncompressed, on device buffers: what the deciding
 * rule of its policy file asks with its "exact" key (docs/policy.md), from a measured table
 * (perf/scripts/coccl_tune.py) that knows which of the real NCCL and coccl's own kernels is
 * faster at that size. */
typedef enum COCCL_ENUM_INT {
  cocclExactDefault =
      0,              /* no rule says: COCCL_DEVICE_EXACT decides (the NCCL shim: the real NCCL) */
  cocclExactNccl = 1, /* the real NCCL */
  cocclExactCoccl = 2 /* coccl's own kernels (CUDA IPC); the NCCL shim then routes it to coccl */
} cocclExactPath_t;

/* Writes to *path the path the deciding policy rule asks for the call (coll, count, datatype,
 * op: as cocclCommQueryCodec takes them) when it is not compressed; cocclExactDefault for a
 * call that is compressed, for count 0 and for coll cocclCollSendRecv. Where the path asked for
 * is not there (no NCCL beside CUDA IPC, COCCL_DEVICE_EXACT=coccl, fp8 types on NCCL, or
 * COCCL_DEVICE_TRANSPORT=nccl without coccl's kernels) the other one runs the call.
 * Does not communicate; any thread while the communicator is alive.
 * Errors: cocclInvalidArgument (as cocclCommQueryCodec; path NULL). */
COCCL_API cocclResult_t cocclCommQueryExactPath(cocclComm_t comm, cocclCollKind_t coll,
                                                size_t count, cocclDataType_t datatype,
                                                cocclRedOp_t op, cocclExactPath_t* path);

/* Whether the NCCL shim runs an AllGather of `sendcount` elements of `datatype` a rank as a
 * weight-difference AllGather (SDP4Bit's qWD, through cocclAllGatherDelta against a reference
 * the shim keeps: nccl-tests-shim/README.md): writes 1 to *delta when the call is compressed
 * (cocclCommQueryCodec with cocclCollAllGather) and the policy rule that decides it says
 * "delta": true (docs/policy.md), else 0. coccl's own cocclAllGather never reads recvbuff:
 * programs on coccl's API call cocclAllGatherDelta themselves. Does not communicate; any
 * thread while the communicator is alive.
 * Errors: cocclInvalidArgument (as cocclCommQueryCodec; delta NULL). */
COCCL_API cocclResult_t cocclCommQueryAllGatherDelta(cocclComm_t comm, size_t sendcount,
                                                     cocclDataType_t datatype, int* delta);

/* The world ranks of comm's members (cocclConfig_t.worldRank, exchanged at init):
 * worldRanks[r] for each rank r of comm, nranks entries (nranks must be comm's size). A program
 * that builds communicators from others (the NCCL shim's ncclCommSplit) passes a member's entry
 * on as the new communicator's cocclConfig_t.worldRank. Does not communicate.
 * Errors: cocclInvalidArgument (comm or worldRanks NULL, comm not initialised, nranks not its
 * size). */
COCCL_API cocclResult_t cocclCommWorldRanks(cocclComm_t comm, int* worldRanks, int nranks);

/* The value coccl uses for its variable `name` (one of README "Environment"), as read once per
 * process: the variable's value when it is set and valid (a choice in the spelling of the table,
 * e.g. COCCL_DEBUG=info gives "INFO"), else its default ("" for an unset string variable);
 * integers in decimal. *isSet (when isSet is not NULL) is 1 when the variable was set to a
 * non-empty value, valid or not, else 0.
 * Errors: cocclInvalidArgument (name or value NULL, a name coccl does not read, valueLen too
 * small for the value and its NUL: the message gives the size needed). */
COCCL_API cocclResult_t cocclGetEnvValue(const char* name, char* value, size_t valueLen,
                                         int* isSet);

/* Statistics of the last collective this communicator ran on this rank (for perf tools):
 * logical bytes (count * element size of the user data this rank contributed) and bytes this
 * rank sent on the wire, and the codec used ("none" when uncompressed). */
typedef struct {
  size_t logicalBytes;
  size_t wireBytesSent;
  const char* codec;
  const char* algorithm; /* "two-shot", "one-shot", "ring", "direct", ... ("/nccl" etc.: the
                            device transport) */
} cocclCollStats_t;
COCCL_API cocclResult_t cocclCommGetLastCollStats(cocclComm_t comm, cocclCollStats_t* stats);

/* The phases of coccl's CUDA IPC collective kernels (cocclCommGetPhaseTimes). Reduce family
 * (AllReduce, ReduceScatter, Reduce; two-shot): PUSH is the encode-on-send of each owner's part
 * into its inbox, OWN the owner step (decode-reduce of the p inputs, the result's encode and the
 * owner's own output), PULL the decode of every owner's result (AllReduce). Gather family
 * (AllGather, Broadcast): PUSH the producer's encode into its outbox and its own output, PULL
 * the decode of the peers' outboxes. Each *_WAIT is the wait for the peers' flags before it
 * (their data, or their release of a slot). AGREE is the call's agreement before any data
 * moves; TOTAL a block's whole time. */
typedef enum {
  cocclPhaseAgree = 0,
  cocclPhasePushWait = 1,
  cocclPhasePush = 2,
  cocclPhaseOwnWait = 3,
  cocclPhaseOwn = 4,
  cocclPhasePullWait = 5,
  cocclPhasePull = 6,
  cocclPhaseTotal = 7,
  cocclNumPhases = 8
} cocclPhase_t;

/* Counters since the communicator's init, summed over every thread block (channel) of every
 * collective kernel this rank ran over CUDA IPC: ns[phase] / blockRuns is one block's time in
 * that phase per call, rounds / blockRuns its rounds per call. Read on the GPU's clock
 * (%globaltimer, nanoseconds; its resolution may be about a microsecond, which averages out
 * over blocks and rounds). Kernels that failed add nothing. */
typedef struct {
  uint64_t blockRuns; /* blocks of the kernels counted, summed over kernels */
  uint64_t rounds;    /* rounds those blocks ran, summed */
  uint64_t ns[cocclNumPhases];
} cocclPhaseTimes_t;

/* Writes the phase counters of comm's CUDA IPC collective kernels to *times (for perf tools:
 * take two readings around the calls and subtract). Needs COCCL_PHASE_TIMES=1 at init, which
 * times every collective kernel (a barrier a phase, about +1-2 us a call; README
 * "Environment"). Copies from the device synchronously: call after the calls' stream has
 * finished. Staged-pipeline calls (plug-in codecs), Send/Recv and the NCCL executor's calls are
 * not timed.
 * Errors: cocclInvalidArgument (comm or times NULL), cocclInvalidUsage (COCCL_PHASE_TIMES was
 * not 1 at init, or comm has no CUDA IPC executor), cocclUnhandledCudaError (the copy). */
COCCL_API cocclResult_t cocclCommGetPhaseTimes(cocclComm_t comm, cocclPhaseTimes_t* times);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* COCCL_QUERY_H_ */
