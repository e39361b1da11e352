/*
 * coccl: compressed collective communication for distributed training.
 *
 * The API mirrors NCCL 2.28's nccl.h: the same shapes, the same numeric values for results,
 * data types and reduction operators, the same in-place conventions. A program written against
 * ncclAllReduce & co. is ported by renaming nccl -> coccl (or runs unmodified through the
 * libnccl.so.2 shim in nccl-tests-shim/).
 *
 * Memory: host buffers (plain malloc'd memory) run the host path over UCX; the call returns when
 * the result is in the output, like Gloo. Device buffers (CUDA builds) are enqueued on `stream`
 * and the call returns at once, like NCCL. `stream` is ignored for host buffers.
 *
 * Compression: AllReduce, ReduceScatter and AllGather of SUM/AVG, and Send/Recv, on
 * fp32/fp16/bf16 may go through a lossy codec chosen by the communicator's policy (cocclConfig_t
 * codec fields, COCCL_CODEC* environment variables, COCCL_COMPRESS_MIN_BYTES) or per call
 * (coccl*Codec variants below). Every other op or data type takes the exact, uncompressed path.
 * See README "Codecs" for the formats.
 *
 * Units: `count` arguments are numbers of ELEMENTS of `datatype`, never bytes, unless a name says
 * Bytes. Ranks are 0..nranks-1.
 *
 * Errors: every function returns a cocclResult_t; on failure cocclGetLastError() returns a
 * message. No function aborts the process or lets a C++ exception escape.
 *   cocclInvalidArgument  a NULL pointer where a value is needed, a bad data type / op / rank /
 *                         root / count, host and device buffers mixed in one call, or an
 *                         uninitialised config.
 *   cocclInvalidUsage     a valid argument in the wrong state (aborted or failed communicator,
 *                         group misuse, device buffers while the device path is off), or ranks whose calls
 *                         do not match (different count, type, op, root, codec or call number:
 *                         every rank of the call gets it, see "Collectives" below).
 *   cocclSystemError      a socket / UCX / OS call failed, or a wait ran past COCCL_TIMEOUT_MS.
 *   cocclRemoteError      a peer closed its connection or reported an error (dead rank).
 *   cocclUnhandledCudaError a CUDA runtime call failed.
 *   cocclInternalError    a bug in coccl; please report it.
 */
#ifndef COCCL_H_
#define COCCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define COCCL_MAJOR 0
#define COCCL_MINOR 1
#define COCCL_PATCH 0
#define COCCL_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define COCCL_VERSION_CODE COCCL_VERSION(COCCL_MAJOR, COCCL_MINOR, COCCL_PATCH)

#if defined(__GNUC__)
#define COCCL_API __attribute__((visibility("default")))
#else
#define COCCL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The caller's CUDA stream. Declared without CUDA headers; the same type as cudaStream_t. */
typedef struct CUstream_st* cocclStream_t;
#ifndef __CUDA_RUNTIME_H__
#ifndef COCCL_NO_CUDASTREAM_TYPEDEF
typedef struct CUstream_st* cudaStream_t;
#endif
#endif

/* Opaque communicator handle. */
typedef struct cocclComm* cocclComm_t;
#define COCCL_COMM_NULL NULL

/* 128 opaque bytes, passed by value: the bootstrap root's socket address and a random magic. */
#define COCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[COCCL_UNIQUE_ID_BYTES];
} cocclUniqueId;

/* In C++ the enums below have int as their fixed underlying type. A C caller may pass any int
 * (an invalid value must reach the argument checks, which answer cocclInvalidArgument); an enum
 * without a fixed type cannot hold such a value in C++ (undefined behaviour, which UBSan's enum
 * check reports at the first copy of the argument). Size and calling convention are C's. */
#ifdef __cplusplus
#define COCCL_ENUM_INT : int
#else
#define COCCL_ENUM_INT
#endif

/* Result codes (values equal to ncclResult_t). */
typedef enum COCCL_ENUM_INT {
  cocclSuccess = 0,
  cocclUnhandledCudaError = 1,
  cocclSystemError = 2,
  cocclInternalError = 3,
  cocclInvalidArgument = 4,
  cocclInvalidUsage = 5,
  cocclRemoteError = 6,
  cocclInProgress = 7,
  cocclNumResults = 8
} cocclResult_t;

/* Reduction operators (values equal to ncclRedOp_t). AVG divides the sum by nranks. */
typedef enum COCCL_ENUM_INT {
  cocclSum = 0,
  cocclProd = 1,
  cocclMax = 2,
  cocclMin = 3,
  cocclAvg = 4,
  cocclNumOps = 5
} cocclRedOp_t;

/* Data types (values equal to ncclDataType_t). fp16/bf16/fp8 are reduced in fp32. */
typedef enum COCCL_ENUM_INT {
  cocclInt8 = 0,
  cocclChar = 0,
  cocclUint8 = 1,
  cocclInt32 = 2,
  cocclInt = 2,
  cocclUint32 = 3,
  cocclInt64 = 4,
  cocclUint64 = 5,
  cocclFloat16 = 6,
  cocclHalf = 6,
  cocclFloat32 = 7,
  cocclFloat = 7,
  cocclFloat64 = 8,
  cocclDouble = 8,
  cocclBfloat16 = 9,
  cocclFloat8e4m3 = 10,
  cocclFloat8e5m2 = 11,
  cocclNumTypes = 12
} cocclDataType_t;

#define COCCL_CONFIG_UNDEF_INT INT_MIN
#define COCCL_CONFIG_UNDEF_PTR NULL
#define COCCL_CONFIG_MAGIC 0xcafebeefu

/*
 * Communicator configuration. The leading fields are NCCL 2.28's ncclConfig_t, in its order;
 * coccl's own fields follow. Always start from COCCL_CONFIG_INITIALIZER. coccl reads `size`
 * bytes: a config from an older header (smaller size) leaves the newer fields at their
 * defaults; a larger one (newer header) is accepted and its unknown tail ignored.
 * NCCL fields that have no meaning for coccl are accepted and ignored.
 */
typedef struct cocclConfig_v1 {
  size_t size;          /* sizeof(cocclConfig_t) of the caller's header */
  unsigned int magic;   /* COCCL_CONFIG_MAGIC */
  unsigned int version; /* COCCL_VERSION_CODE of the caller's header */
  int blocking;         /* 1 (default): init blocks. 0 is accepted; init still completes in the call */
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName; /* shown in log lines */
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  /* ---- coccl fields ---- */
  const char* codec;              /* default codec spec for compressed collectives ("none",
                                     "int8", "fp8_ash_ds", "fp8_ash_ds:block=64"...); overrides
                                     COCCL_CODEC */
  const char* codecAllReduce;     /* per-collective overrides (COCCL_CODEC_ALLREDUCE ...) */
  const char* codecReduceScatter;
  const char* codecAllGather;
  long long compressMinBytes; /* messages below this many bytes go uncompressed
                                 (COCCL_COMPRESS_MIN_BYTES) */
  long long chunkBytes;       /* pipeline chunk size in bytes of input (COCCL_CHUNK_BYTES) */
  int timeoutMs;              /* every wait's timeout in ms (COCCL_TIMEOUT_MS) */
  const char* algorithm;      /* "auto", "two-shot" (also "direct"), "ring" or "one-shot"
                                 (COCCL_ALGO) for AllReduce, ReduceScatter and AllGather;
                                 equal on all ranks */
  const char* deviceExact;    /* "auto", "coccl" or "nccl" (COCCL_DEVICE_EXACT): who runs the
                                 uncompressed device operations beside CUDA IPC; equal on all
                                 ranks */
  int ranksPerNode;           /* ranks per node of the two-level "hier:" codecs
                                 (COCCL_RANKS_PER_NODE; must divide nranks; 0: from the hosts) */
  const char* codecSendRecv;  /* codec spec for cocclSend / cocclRecv (COCCL_CODEC_SENDRECV);
                                 unlike the collectives' entries it does not inherit `codec`:
                                 unset or "none" keeps Send/Recv exact */
  int worldRank;              /* this rank's world rank (>= 0), which the policy file's
                                 "members" and "stride" match on; unset: the launcher's RANK,
                                 OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID (the first set),
                                 else the rank in this communicator (docs/policy.md) */
  const char* policy;         /* path of a policy file (COCCL_POLICY; docs/policy.md): rules
                                 that choose codec and threshold per communicator, collective,
                                 type and size before the codec fields above; "" : none */
} cocclConfig_t;

#define COCCL_CONFIG_INITIALIZER                                                             \
  {                                                                                          \
    sizeof(cocclConfig_t), COCCL_CONFIG_MAGIC, COCCL_VERSION_CODE, COCCL_CONFIG_UNDEF_INT,   \
        COCCL_CONFIG_UNDEF_INT, COCCL_CONFIG_UNDEF_INT, COCCL_CONFIG_UNDEF_INT,              \
        COCCL_CONFIG_UNDEF_PTR, COCCL_CONFIG_UNDEF_INT, COCCL_CONFIG_UNDEF_INT,              \
        COCCL_CONFIG_UNDEF_PTR, COCCL_CONFIG_UNDEF_INT, COCCL_CONFIG_UNDEF_INT,              \
        COCCL_CONFIG_UNDEF_INT, COCCL_CONFIG_UNDEF_INT, COCCL_CONFIG_UNDEF_INT,              \
        COCCL_CONFIG_UNDEF_INT, COCCL_CONFIG_UNDEF_PTR, COCCL_CONFIG_UNDEF_PTR,              \
        COCCL_CONFIG_UNDEF_PTR, COCCL_CONFIG_UNDEF_PTR, -1LL, -1LL, COCCL_CONFIG_UNDEF_INT,  \
        COCCL_CONFIG_UNDEF_PTR, COCCL_CONFIG_UNDEF_PTR, COCCL_CONFIG_UNDEF_INT,              \
        COCCL_CONFIG_UNDEF_PTR, COCCL_CONFIG_UNDEF_INT, COCCL_CONFIG_UNDEF_PTR               \
  }

/* ---------------------------------------------------------------------------------------------
 * Library and communicator management
 * ------------------------------------------------------------------------------------------- */

/* Writes COCCL_VERSION_CODE (major*10000 + minor*100 + patch) to *version.
 * Errors: cocclInvalidArgument if version is NULL. */
COCCL_API cocclResult_t cocclGetVersion(int* version);

/* Creates a unique id for a new communicator: starts the bootstrap root (a listening socket and
 * a thread in this process, on COCCL_SOCKET_IFNAME's interface) and writes its address and a
 * random magic into *uniqueId. Call once, on one rank, and give the id to every rank.
 * Errors: cocclInvalidArgument (NULL), cocclSystemError (no interface / socket). */
COCCL_API cocclResult_t cocclGetUniqueId(cocclUniqueId* uniqueId);

/* Creates this rank's communicator of `nranks` ranks; blocks until all ranks joined or
 * COCCL_TIMEOUT_MS passed. With COCCL_COMM_ID=host:port set, an all-zero id (or the id
 * cocclGetUniqueId returns while it is set) means that address, and rank 0 starts
 * the root at that address (no id exchange needed). The rank runs on host memory; it also uses
 * the current CUDA device for device buffers in CUDA builds.
 * Errors: cocclInvalidArgument (comm NULL, nranks < 1, rank outside [0, nranks), bad id magic),
 * cocclSystemError / cocclRemoteError (bootstrap or transport failure, timeout). */
COCCL_API cocclResult_t cocclCommInitRank(cocclComm_t* comm, int nranks, cocclUniqueId commId,
                                          int rank);

/* As cocclCommInitRank, with a configuration (NULL means defaults).
 * Errors: as cocclCommInitRank, plus cocclInvalidArgument if config->magic is not
 * COCCL_CONFIG_MAGIC (config not initialised with COCCL_CONFIG_INITIALIZER), its size is
 * smaller than NCCL's fields, a codec spec in it does not parse, or a set field is out of its
 * range, which is the range of its COCCL_* variable (README "Environment": timeoutMs <= 0,
 * chunkBytes < 4096, compressMinBytes < -1, algorithm other than auto / two-shot / direct /
 * ring / one-shot, deviceExact other than auto / coccl / nccl); the message names the field and
 * the range; cocclInvalidUsage on every rank when the ranks' algorithm differs. (A COCCL_*
 * variable out of its range warns instead; README "Environment" says what it means.) */
COCCL_API cocclResult_t cocclCommInitRankConfig(cocclComm_t* comm, int nranks,
                                                cocclUniqueId commId, int rank,
                                                cocclConfig_t* config);

/* Waits for this rank's outstanding operations and synchronises with the other ranks so that
 * cocclCommDestroy frees nothing a peer still reads. Errors: cocclInvalidArgument (NULL),
 * cocclSystemError/cocclRemoteError (a peer died meanwhile). */
COCCL_API cocclResult_t cocclCommFinalize(cocclComm_t comm);

/* Frees the communicator's local resources (without a barrier unless finalized); waits first
 * for calls in flight on other threads (a collective there runs to its end or its timeout, as
 * it did before; an init deferred inside a group to its end). NULL is a
 * no-op returning cocclSuccess. Errors: cocclInvalidArgument for a handle that is not live
 * (destroyed or aborted already, or never returned by cocclCommInitRank): every function that
 * takes a communicator checks this first and never touches such a handle. Calls in flight on
 * other threads (a watchdog's cocclCommGetAsyncError, a query) return before anything is freed;
 * later ones are rejected. */
COCCL_API cocclResult_t cocclCommDestroy(cocclComm_t comm);

/* Stops every operation in flight on `comm` (from any thread; the call in flight returns
 * cocclRemoteError or cocclInvalidUsage promptly), closes its connections so peers fail fast
 * instead of waiting for the timeout, and frees the communicator. NULL is a no-op; a handle that
 * is not live is cocclInvalidArgument (as cocclCommDestroy). */
COCCL_API cocclResult_t cocclCommAbort(cocclComm_t comm);

/* Writes the communicator's asynchronous error state (cocclSuccess while healthy; the error
 * that broke it otherwise) to *asyncError. Thread-safe and cheap: an atomic load, plus at most
 * every 10 ms a non-blocking poll of the connections to the peers, so that a peer that died or
 * aborted while no call was in flight breaks the communicator here too (cocclRemoteError; the
 * message in cocclGetLastError), as a watchdog polling it expects; safe against a
 * cocclCommDestroy / cocclCommAbort on another thread (which waits for it to return).
 * Errors: cocclInvalidArgument (NULL, or a communicator destroyed or aborted already). */
COCCL_API cocclResult_t cocclCommGetAsyncError(cocclComm_t comm, cocclResult_t* asyncError);

/* Number of ranks / this rank / the CUDA device whose buffers the communicator takes (-1 for a
 * host-only rank, and when its device path is off, e.g. no transport reaches every rank: then
 * device buffers are rejected with cocclInvalidUsage). */
COCCL_API cocclResult_t cocclCommCount(const cocclComm_t comm, int* count);
COCCL_API cocclResult_t cocclCommUserRank(const cocclComm_t comm, int* rank);
COCCL_API cocclResult_t cocclCommCuDevice(const cocclComm_t comm, int* device);

/* A static string naming `result`. */
COCCL_API const char* cocclGetErrorString(cocclResult_t result);

/* The message of the last error or warning raised in this process (comm may be NULL).
 * Never NULL; "" if there was none. */
COCCL_API const char* cocclGetLastError(cocclComm_t comm);

/* ---------------------------------------------------------------------------------------------
 * Collectives. All take counts in elements. Host buffers: returns when done. Device buffers:
 * enqueued on stream. Every error listed in the header comment applies; in particular
 * cocclInvalidArgument for a NULL buffer with count > 0, a bad datatype or op, root out of range,
 * a count whose bytes overflow size_t or exceed 2^57 (more than any buffer holds) or whose
 * buffer would wrap the address space, out-of-place buffers that overlap.
 * count == 0 is a no-op and NULL buffers are then accepted.
 * Agreement (host buffers): before any data moves, every rank sends every peer a 128-byte
 * descriptor of its call (collective, count, datatype, op, root, codec and its format version,
 * call number) and compares all of them. Ranks whose calls differ ALL get cocclInvalidUsage
 * (cocclGetLastError names every differing field with rank 0's value and the first differing
 * rank's, e.g. "count differs: 409600 on rank 0, 409598 on rank 3"), nothing is written to
 * recvbuff, and the communicator stays usable. The call number counts every collective that
 * reaches a usable communicator, including count-0 calls and calls that fail their own argument
 * checks: a rank whose call failed there is one call ahead of its peers, whose next call then
 * fails with "call number differs" on every rank; the ranks are then out of step for good
 * (destroy the communicator). Wire bytes (cocclCommGetLastCollStats) include the descriptors:
 * 128 x (nranks - 1) per call. Device buffers: not checked yet (README "Agreement").
 * ------------------------------------------------------------------------------------------- */

/* recvbuff[i] = op over ranks of sendbuff[i], i < count, on every rank. In place if
 * sendbuff == recvbuff. Compressed per the policy for SUM/AVG on fp32/fp16/bf16 (two-shot:
 * reduce-scatter of encoded chunks, fp32 accumulation at each chunk's owner, one encode of the
 * reduced chunk, all-gather of its bytes; every rank's output is bitwise identical). */
COCCL_API cocclResult_t cocclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       cocclDataType_t datatype, cocclRedOp_t op,
                                       cocclComm_t comm, cudaStream_t stream);

/* sendbuff holds nranks*recvcount elements; rank r receives the reduction of block r
 * (elements [r*recvcount, (r+1)*recvcount)). In place if recvbuff == sendbuff + rank*recvcount
 * (in elements). */
COCCL_API cocclResult_t cocclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           cocclDataType_t datatype, cocclRedOp_t op,
                                           cocclComm_t comm, cudaStream_t stream);

/* recvbuff holds nranks*sendcount elements; rank r's sendbuff lands at recvbuff + r*sendcount.
 * In place if sendbuff == recvbuff + rank*sendcount (in elements). Compressed: each rank
 * encodes its shard once and every rank, itself included, decodes every shard, so all ranks
 * hold identical data. */
COCCL_API cocclResult_t cocclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       cocclDataType_t datatype, cocclComm_t comm,
                                       cudaStream_t stream);

/* Copies root's sendbuff to every rank's recvbuff (count elements). In place if
 * sendbuff == recvbuff. sendbuff is read on root only. Never compressed. */
COCCL_API cocclResult_t cocclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                       cocclDataType_t datatype, int root, cocclComm_t comm,
                                       cudaStream_t stream);

/* Reduces into root's recvbuff (recvbuff may be NULL on other ranks). Never compressed. */
COCCL_API cocclResult_t cocclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    cocclDataType_t datatype, cocclRedOp_t op, int root,
                                    cocclComm_t comm, cudaStream_t stream);

/* Point to point: sends `count` elements of sendbuff to rank `peer` / receives `count` elements
 * from rank `peer` into recvbuff. The peer must post the matching Recv/Send with the same count,
 * type and codec. Messages between one pair of ranks match in posting order (sends among sends,
 * receives among receives). Inside a group, sends and receives progress together (no deadlock
 * for exchange patterns: rings, all-to-all, PyTorch's batch_isend_irecv). peer == own rank is
 * allowed inside a group. A send's buffer may overlap a receive of the same group (it is sent as
 * it was when the group started).
 * Compressed per the policy (COCCL_CODEC_SENDRECV / cocclConfig_t.codecSendRecv, which do not
 * inherit COCCL_CODEC; at least COCCL_COMPRESS_MIN_BYTES = count x element size, fp32/fp16/bf16
 * only, and only where the codec's payload is smaller than the input): the sender encodes the
 * whole message once, the receiver decodes it into recvbuff (one encode/decode: the codec's
 * error bound per element).
 * Agreement (host buffers): every Send and every Recv first sends its peer a 128-byte header
 * (count, type, codec and its format version, payload bytes, message number) and both ends
 * check the pair's two headers before a payload reaches recvbuff (payloads above 64 KiB leave
 * only after the check); ranks that disagree on count, datatype or codec BOTH get
 * cocclInvalidUsage (cocclGetLastError names the field and both values), nothing is written to
 * recvbuff, and the communicator stays usable (the other pairs of the group complete). Wire bytes (cocclCommGetLastCollStats): 128 per Send and per Recv,
 * plus each Send's payload (count x element size, or the codec's encodedBytes(count)).
 * count == 0 is a no-op (no header either: a peer that posts a non-zero count then waits until
 * COCCL_TIMEOUT_MS).
 * Device buffers: compressed with a codec that has device launchers (others run exact, said
 * once per communicator): the sender encodes on `stream`, sends its header over the bootstrap
 * and returns without waiting; the receiver waits for that header (COCCL_TIMEOUT_MS), checks
 * it, answers with its own, receives and decodes on `stream`; a disagreeing receiver returns
 * cocclInvalidUsage at once (recvbuff untouched), the sender from its next Send/Recv group on
 * the communicator. Not capturable into a CUDA graph. Exact Send/Recv on device buffers keep
 * the executor's own semantics (no header). README "Send/Recv".
 * Errors: cocclInvalidArgument (peer outside [0, nranks), a bad datatype, a NULL buffer with
 * count > 0, a buffer of more than 2^57 bytes); cocclInvalidUsage (peer == own rank outside a group, the ends disagree as above,
 * plus the header comment's); cocclSystemError (the peer did not post its side within
 * COCCL_TIMEOUT_MS). */
COCCL_API cocclResult_t cocclSend(const void* sendbuff, size_t count, cocclDataType_t datatype,
                                  int peer, cocclComm_t comm, cudaStream_t stream);
COCCL_API cocclResult_t cocclRecv(void* recvbuff, size_t count, cocclDataType_t datatype,
                                  int peer, cocclComm_t comm, cudaStream_t stream);

/* Groups: calls between GroupStart and GroupEnd are queued and run together at the outermost
 * GroupEnd (nesting allowed; per calling thread). cocclCommInitRank calls inside a group run
 * concurrently at GroupEnd, so one thread can create several communicators. Errors from the
 * queued calls are returned by cocclGroupEnd. Errors: cocclInvalidUsage for GroupEnd without
 * GroupStart. */
COCCL_API cocclResult_t cocclGroupStart(void);
COCCL_API cocclResult_t cocclGroupEnd(void);

/* ---------------------------------------------------------------------------------------------
 * Codecs: explicit choice per call, for programs that mix codecs.
 * ------------------------------------------------------------------------------------------- */

/* Opaque codec handle. COCCL_CODEC_POLICY (NULL) means "use the communicator's policy". */
typedef struct cocclCodec* cocclCodec_t;
#define COCCL_CODEC_POLICY ((cocclCodec_t)0)

/* Creates a codec from a spec "name[:key=value,...]": "none", "int8", "int8:block=64",
 * "fp8_ash_ds", "fp8_ash_ds:block=256,format=e5m2". Errors: cocclInvalidArgument (NULL or a
 * spec that does not parse: unknown name, key or value; the message says which). */
COCCL_API cocclResult_t cocclCodecCreate(const char* spec, cocclCodec_t* codec);
/* Frees a codec handle; it must outlive the calls that name it (a grouped call uses it at
 * cocclGroupEnd). NULL is a no-op returning cocclSuccess (as cocclCommDestroy). Errors:
 * cocclInvalidArgument for a handle destroyed already or never returned by cocclCodecCreate
 * (every call taking one fails the same way, a grouped call at cocclGroupEnd). */
COCCL_API cocclResult_t cocclCodecDestroy(cocclCodec_t codec);

/* Bytes that `count` elements of `datatype` occupy on the wire when encoded by `codec`, for a
 * single chunk (exact; a collective's total also depends on how it is chunked, which
 * cocclCommGetLastCollStats reports after the call). Errors: cocclInvalidArgument (NULL,
 * unsupported datatype, a count of more than 2^57 bytes). */
COCCL_API cocclResult_t cocclCodecEncodedBytes(cocclCodec_t codec, size_t count,
                                               cocclDataType_t datatype, size_t* bytes);

/* The codec's canonical spec string with every parameter spelled out ("" for NULL or a handle
 * that is not live). */
COCCL_API const char* cocclCodecName(cocclCodec_t codec);

/* Elements per block of the codec (a collective cuts messages into chunks of whole blocks,
 * each block encoded on its own: the blocks of a shard start at the shard's first element).
 * Errors: cocclInvalidArgument (NULL). */
COCCL_API cocclResult_t cocclCodecBlockElems(cocclCodec_t codec, size_t* elems);

/* The codec's documented bound on |decode(encode(x))_i - x_i| for any element i of a block
 * (cocclCodecBlockElems elements) whose finite input has root-mean-square blockRms and largest
 * magnitude blockAbsMax, one encode and decode (the plug-in ABI's errorBound; 0 for a lossless
 * codec). A collective quantises a value up to nranks times (AllReduce, ReduceScatter: each
 * rank's contribution or partial sum once, the result once) and AllGather once; coccl_perf's
 * #wrong column uses this. Errors: cocclInvalidArgument (NULL, negative or non-finite input). */
COCCL_API cocclResult_t cocclCodecErrorBound(cocclCodec_t codec, double blockRms,
                                             double blockAbsMax, double* bound);

/* As cocclAllReduce/ReduceScatter/AllGather with this codec for this call regardless of the
 * policy and size threshold. An op or datatype the codec cannot do (e.g. MAX, int32) runs
 * uncompressed, never as a different op. */
COCCL_API cocclResult_t cocclAllReduceCodec(const void* sendbuff, void* recvbuff, size_t count,
                                            cocclDataType_t datatype, cocclRedOp_t op,
                                            cocclCodec_t codec, cocclComm_t comm,
                                            cudaStream_t stream);
COCCL_API cocclResult_t cocclReduceScatterCodec(const void* sendbuff, void* recvbuff,
                                                size_t recvcount, cocclDataType_t datatype,
                                                cocclRedOp_t op, cocclCodec_t codec,
                                                cocclComm_t comm, cudaStream_t stream);
COCCL_API cocclResult_t cocclAllGatherCodec(const void* sendbuff, void* recvbuff,
                                            size_t sendcount, cocclDataType_t datatype,
                                            cocclCodec_t codec, cocclComm_t comm,
                                            cudaStream_t stream);

/* Weight-difference AllGather (SDP4Bit's qWD): for data-parallel weights that change a little
 * each step. recvbuff (nranks*sendcount elements, as cocclAllGather) holds on entry the values
 * the previous call left there, on every rank alike; that is the whole state (nothing is kept
 * inside coccl). Each rank encodes its new shard minus its shard of recvbuff, the payloads are
 * gathered, and every rank, the owner included, adds each decoded difference to its copy:
 *   d    = fp32(sendbuff[i]) - fp32(recvbuff[rank*sendcount + i])     (on each rank)
 *   recvbuff[j*sendcount + i] = T(fp32(recvbuff[j*sendcount + i]) + decode(encode(d_j))[i])
 * (a previous value that is not finite: see "Non-finite values" below)
 * one fp32 subtraction and one fp32 addition, rounded to nearest even (then to T = fp32, fp16,
 * bf16), element by element, the same on every rank and on host and device buffers: every
 * rank ends with bitwise identical recvbuff (the owner adds the decoded value of its own
 * payload, not its exact difference). Because the reference is the reconstruction that all
 * ranks hold, errors do not accumulate: after any call, |recvbuff - new| is one quantization
 * of that call's difference (new minus the previous reconstruction), plus the rounding to T.
 * The payload is encoded from the fp32 differences in chunks of COCCL_CHUNK_BYTES of input
 * (whole codec blocks; the blocks of a shard start at its first element, any count).
 *
 * Exact calls: with COCCL_DELTA_RESET in `flags`, or when there is no codec (the policy's
 * ALLGATHER entry is "none" or below COCCL_COMPRESS_MIN_BYTES, or the datatype is not fp32 /
 * fp16 / bf16), the call is a plain exact cocclAllGather: recvbuff's old contents are ignored
 * and it receives every rank's sendbuff bit for bit. "First call" is the caller's to say: pass
 * COCCL_DELTA_RESET on the first call (recvbuff is then not read) and whenever the weights were
 * changed other than through this call (a checkpoint load).
 * Without it recvbuff must hold the previous call's result.
 *
 * Codec: `codec`, or COCCL_CODEC_POLICY for the communicator's ALLGATHER entry
 * (codecAllGather / COCCL_CODEC_ALLGATHER, else codec / COCCL_CODEC) under the same size
 * threshold as cocclAllGather. Device buffers need a codec with device operations
 * (COCCL_CODEC_CAP_DEVICE, e.g. int8, fp8_ash_ds, int4): else cocclInvalidUsage.
 * Non-finite values: a non-finite new value or difference is encoded as the codec encodes it
 * (int8, fp8_ash_ds and int4 send NaN / +-Inf at their positions in a RAW block, whose finite
 * neighbours then get a coarser step for this call), so a weight that becomes +-Inf or NaN
 * arrives as such; a difference that overflows fp32 (|new - prev| > 3.4e38) is +-Inf and
 * arrives as +-Inf. Where the previous value (recvbuff's element) is not finite, the call
 * sends the new value itself instead of a difference and stores its decoded value:
 *   d = fp32(sendbuff[i]),  recvbuff[j*sendcount + i] = T(decode(encode(d_j))[i])
 * so such an element takes the new value at the next call (within the codec's bound of it, in
 * a block whose step that value may coarsen for this call) instead of staying NaN.
 * Agreement: every call first sends each peer a 128-byte header (flags, count, datatype,
 * memory kind, codec and its format version, payload bytes) over the host transport, and every
 * rank checks all headers before any payload moves: ranks that disagree on the reset flag,
 * sendcount, datatype, buffer kind or codec ALL get cocclInvalidUsage (cocclGetLastError names
 * the first rank that differs from rank 0 and each field with both values), recvbuff is not
 * written, and the communicator stays usable. A device call therefore blocks the calling
 * thread until every rank has posted it (the kernels are then enqueued on `stream`); in a CUDA
 * graph capture the check runs once, at capture (the scratch must exist: run one call first).
 * In place: sendbuff must not overlap recvbuff (recvbuff's own shard is the reference), except
 * at the in-place position (sendbuff == recvbuff + rank*sendcount) with COCCL_DELTA_RESET.
 * Wire bytes (cocclCommGetLastCollStats().wireBytesSent): (nranks-1) * 128 for the headers plus
 * (nranks-1) * encodedBytes(sendcount) for the payloads (summed over the chunks; exact calls:
 * (nranks-1) * sendcount * element size), so the gathered payload is nranks *
 * encodedBytes(sendcount); codec "none" for exact calls; algorithm "delta/direct" (host),
 * "delta/<the device gather's algorithm>" (device).
 * sendcount == 0 is a no-op (no header: a peer that posts a non-zero count then waits until
 * COCCL_TIMEOUT_MS); so is a call that fails its argument checks, which run on the calling
 * rank alone before the header exchange (cocclInvalidArgument there, the peers wait).
 * Errors: cocclInvalidArgument (as cocclAllGather; flags other than COCCL_DELTA_RESET; sendbuff
 * overlapping recvbuff as above); cocclInvalidUsage (the ranks disagree, as above; device
 * buffers with a codec without device operations or while the device path is off). */
#define COCCL_DELTA_RESET 0x1u
COCCL_API cocclResult_t cocclAllGatherDelta(const void* sendbuff, void* recvbuff,
                                            size_t sendcount, cocclDataType_t datatype,
                                            cocclCodec_t codec, unsigned int flags,
                                            cocclComm_t comm, cudaStream_t stream);

/* As cocclSend / cocclRecv with this codec for this call regardless of the policy and size
 * threshold (COCCL_CODEC_POLICY: the policy's choice, as cocclSend / cocclRecv). A datatype the
 * codec cannot encode (e.g. int32, fp64) runs uncompressed. Both ends must pass the same codec
 * (the same canonical spec and format version) or get cocclInvalidUsage (cocclSend above). The
 * codec handle must stay alive until the call returns (in a group: until cocclGroupEnd
 * returns). Errors: as cocclSend / cocclRecv. */
COCCL_API cocclResult_t cocclSendCodec(const void* sendbuff, size_t count,
                                       cocclDataType_t datatype, int peer, cocclCodec_t codec,
                                       cocclComm_t comm, cudaStream_t stream);
COCCL_API cocclResult_t cocclRecvCodec(void* recvbuff, size_t count, cocclDataType_t datatype,
                                       int peer, cocclCodec_t codec, cocclComm_t comm,
                                       cudaStream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* What coccl would do for a call, its environment, the last call's statistics. */
#include "coccl_query.h"

#endif /* COCCL_H_ */
