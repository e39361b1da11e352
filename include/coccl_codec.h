/*
 * coccl codec plug-in ABI, version 1 (C, plain data only). docs/codec-plugins.md is the guide.
 *
 * A codec turns `count` elements of one data type into a self-contained payload of exactly
 * encodedBytes(count, dtype) bytes and back. coccl's collectives cut messages into chunks whose
 * boundaries are multiples of blockElems() and encode each chunk into its own payload; in a
 * two-shot AllReduce the owner of a shard decodes the peers' payloads, sums them with its own
 * raw input and encodes the sum once (decodeReduceEncode), which every rank then decodes.
 *
 * A plug-in is a shared library exporting one symbol per ABI version it implements:
 *
 *     const cocclCodecPlugin_v1_t cocclCodecPlugin_v1 = { sizeof(cocclCodecPlugin_v1_t),
 *                                                          COCCL_CODEC_ABI_V1, "mycodec", ... };
 *
 * (COCCL_CODEC_PLUGIN_EXPORT marks it visible). coccl probes the newest version it knows first
 * (today: v1) and refuses, with a message naming both versions, a plug-in that exports only
 * versions it does not know, whose abiVersion differs from the symbol's version or whose
 * structSize differs from sizeof(cocclCodecPlugin_v1_t). Built-in codecs (none, int8,
 * fp8_ash_ds) are registered through the same descriptor.
 *
 * Loading: COCCL_CODEC_PLUGIN="a,b,..." (paths, or bare names: `foo` is looked up as
 * libcoccl-codec-foo.so beside libcoccl.so, in its coccl/ subfolder, then on the dynamic
 * loader's path; a tool in <prefix>/bin that links coccl statically, like coccl_codec_check,
 * also looks in <prefix>/lib/coccl/ before the loader's path; "none" or unset loads nothing). A codec then is used by name in every codec
 * spec ("name[:key=value,...]": COCCL_CODEC*, cocclConfig_t, cocclCodecCreate, coccl_perf
 * --codec, the shim). Every rank must load the same codecs with the same format versions.
 *
 * ---- The contract (what coccl relies on; coccl_codec_check tests each point) ---------------
 * Sizes. encodedBytes(count, dtype) is exact: encode writes exactly that many bytes and never
 *   one more; decode and decodeAccumulate read at most that many. It may depend on the
 *   instance, count and dtype only. count = 0 is a no-op for every operation.
 * Blocks. Encoding a message in chunks whose boundaries are multiples of blockElems() must
 *   give, per chunk, what encoding that chunk alone gives (payloads are self-contained). A
 *   partial last block (count not a multiple of blockElems()) must round-trip as well as a full
 *   one, never reading or writing past `count` elements, unless the instance refuses such
 *   counts: then encodedBytes returns 0 for them and every operation COCCL_CODEC_E_INVALID
 *   (e.g. tah's default, whose blocks are rows of a tensor). coccl then raises
 *   cocclInvalidArgument, naming the count and blockElems(), for a call that asks for the codec
 *   by name, before anything moves, and sends the call exact where its policy picked the codec.
 *   Counts that are whole blocks are never refused. coccl_codec_check checks the partial-block
 *   contract on instances that take every count.
 * Determinism. Same instance parameters and input: same payload bytes, on every call, thread,
 *   rank, process and machine, host and device alike (where both exist, their bytes are
 *   identical: coccl may encode on one and decode on the other). Stochastic rounding, if any,
 *   must come from a counter-based generator of the instance's parameters and element index.
 *   COCCL_CODEC_CAP_DETERMINISTIC declares this; coccl refuses to register a codec without it
 *   (every rank's AllReduce output must be bitwise identical).
 * Thread safety. After create(), every function may be called concurrently from any number of
 *   threads with distinct output buffers (the instance is read-only); destroy() is called once,
 *   after every other call on that instance has returned.
 * Memory. No allocation on the hot path: an operation uses only its arguments and the
 *   workspace coccl passes (at least workspaceBytes(...) bytes, 256-byte aligned; host memory
 *   for host operations, device memory for device operations; NULL when the size is 0).
 *   Device operations only enqueue work on `stream` (no synchronisation, no allocation, legal
 *   under CUDA graph capture) and return at once.
 * Non-finite input. A codec with COCCL_CODEC_CAP_NONFINITE decodes every NaN as a NaN and
 *   +/-Inf as the same infinity, and leaves the other elements of a block with a non-finite
 *   element within its error bound (e.g. by carrying such blocks raw). Without the bit, output
 *   for blocks with non-finite input is unspecified but must not crash or write out of bounds.
 * Garbage payloads. decode / decodeAccumulate / decodeReduceEncode of arbitrary bytes of the
 *   right length must not crash, hang, or read or write outside their buffers (the values
 *   written are unspecified). coccl's wire carries payloads between ranks it trusts, but a
 *   codec must stay memory-safe on anything.
 * Errors. Functions return 0 (COCCL_CODEC_OK) or a nonzero COCCL_CODEC_E* code; coccl turns a
 *   nonzero return into an error of the collective (cocclInvalidArgument for E_INVALID,
 *   cocclUnhandledCudaError for E_CUDA, else cocclInternalError) with a message naming the
 *   codec, the operation and the code. create() writes a one-line reason (NUL-terminated, at
 *   most errLen bytes) into err.
 *
 * Pointers: host operations get host memory, device operations device memory (or managed /
 * host-registered memory the device can reach); `ins` arrays are HOST arrays of pointers.
 * Typed buffers have their type's natural alignment; payloads 4-byte alignment at least.
 */
#ifndef COCCL_CODEC_H_
#define COCCL_CODEC_H_

#include <stddef.h>
#include <stdint.h>

#include "coccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ABI versions: the exported symbol of version N is cocclCodecPlugin_vN. */
#define COCCL_CODEC_ABI_V1 1u
#define COCCL_CODEC_ABI_LATEST COCCL_CODEC_ABI_V1
#define COCCL_CODEC_PLUGIN_SYMBOL_V1 "cocclCodecPlugin_v1"

#if defined(__GNUC__)
#define COCCL_CODEC_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define COCCL_CODEC_PLUGIN_EXPORT
#endif

/* Return codes of every plug-in function that returns int. */
#define COCCL_CODEC_OK 0
#define COCCL_CODEC_E_INVALID 1     /* bad argument (dtype, count, pointer, parameter) */
#define COCCL_CODEC_E_UNSUPPORTED 2 /* operation not provided for these arguments */
#define COCCL_CODEC_E_CUDA 3        /* a CUDA launch failed */
#define COCCL_CODEC_E_INTERNAL 4

/* Capability bits (cocclCodecPlugin_v1_t.capabilities). */
#define COCCL_CODEC_CAP_LOSSLESS (1u << 0)      /* decode(encode(x)) == x bit for bit; coccl */
                                                /* never compresses with a lossless codec's */
                                                /* policy (it would only add work) */
#define COCCL_CODEC_CAP_NONFINITE (1u << 1)     /* NaN / Inf handled as the contract says */
#define COCCL_CODEC_CAP_DEVICE (1u << 2)        /* `device` holds all four operations */
#define COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE (1u << 3) /* host.decodeReduceEncode is given */
                                                /* (else coccl composes it, see below) */
#define COCCL_CODEC_CAP_DETERMINISTIC (1u << 4) /* required: see "Determinism" above */
#define COCCL_CODEC_CAP_OWN_SUM_ORDER (1u << 5) /* decodeReduceEncode forms the sum in an */
                                                /* fp32 order of its own (see there) */

/* Bit masks over cocclDataType_t and cocclRedOp_t values. */
#define COCCL_CODEC_DTYPE_BIT(dt) (1u << (unsigned)(dt))
#define COCCL_CODEC_OP_BIT(op) (1u << (unsigned)(op))

/* Host operations (all required; decodeReduceEncode only with CAP_DECODE_REDUCE_ENCODE).
 * `instance` is what create() returned; `dtype` a cocclDataType_t value the descriptor's
 * dtypeMask allows; `ws` the workspace (workspaceBytes(instance, count, dtype, p, 0) bytes). */
typedef struct {
  /* out[0, encodedBytes(count, dtype)) = encode(in[0, count) of dtype). */
  int (*encode)(const void* instance, const void* in, int dtype, size_t count, void* out,
                void* ws);
  /* out[0, count) of dtype = decode(payload in), rounded to nearest even from the codec's
   * internal value where dtype is narrower. */
  int (*decode)(const void* instance, const void* in, size_t count, int dtype, void* out,
                void* ws);
  /* acc[i] = ((acc[i] + decode(ins[0])[i]) + decode(ins[1])[i]) + ... in fp32, in this order,
   * for the n payloads ins[0..n-1] (encoded from dtype input), 1 <= n <= 64. */
  int (*decodeAccumulate)(const void* instance, const void* const* ins, int n, size_t count,
                          int dtype, float* acc, void* ws);
  /* The two-shot owner step: acc = sum over r = 0..p-1, in this order, the first term
   * assigned, of (r == self ? (float)selfIn : decode(ins[r])); acc *= scale when scale != 1
   * (1/p for AVG); out = the payload (of dtype input, count elements) that encodes the fp32
   * values acc themselves, without rounding them to dtype first (what encode() of acc as fp32
   * input gives, for a codec whose payload does not depend on the input type); if decoded !=
   * NULL, decoded[0, count) of dtype = decode(out) (what every rank outputs). ins[self] is not
   * read; selfIn is the owner's raw input of dtype (never quantised); 1 <= p <= 64,
   * 0 <= self < p. selfIn may equal decoded.
   * With CAP_OWN_SUM_ORDER the sum may be formed in another fp32 order that the codec documents
   * (the same real number, the same on host and device, e.g. fp8_ash_ds sums in the Hadamard-
   * rotated domain: 2 transforms an element instead of p + 1; int8 sums its rotated payload
   * blocks before one transform), so out may differ from the
   * encoding of acc above by rounding; decoded must still be decode(out), and the result must
   * be as close to the exact sum as that encoding's (coccl_codec_check checks both).
   * Without CAP_DECODE_REDUCE_ENCODE (NULL here) coccl computes it on the host as: acc in fp32
   * by the sum above (decodeAccumulate for the payloads), scaled, then encode() of acc as fp32
   * input when the codec takes fp32 and its fp32 payload has dtype's size, else of acc rounded
   * to dtype; decoded by decode(). */
  int (*decodeReduceEncode)(const void* instance, const void* const* ins, int p, int self,
                            const void* selfIn, int dtype, size_t count, float scale, void* out,
                            void* decoded, void* ws);
} cocclCodecHostOps_v1_t;

/* Device operations: the same four with the same results (bit for bit the host's), enqueued on
 * `stream` (a cudaStream_t). With CAP_DEVICE all four are required; without it all NULL, and
 * coccl refuses device buffers with this codec (cocclInvalidUsage) instead of falling back.
 * `ws` is device memory of workspaceBytes(instance, count, dtype, p, 1) bytes. */
typedef struct {
  int (*encode)(const void* instance, const void* in, int dtype, size_t count, void* out,
                void* ws, cudaStream_t stream);
  int (*decode)(const void* instance, const void* in, size_t count, int dtype, void* out,
                void* ws, cudaStream_t stream);
  int (*decodeAccumulate)(const void* instance, const void* const* ins, int n, size_t count,
                          int dtype, float* acc, void* ws, cudaStream_t stream);
  int (*decodeReduceEncode)(const void* instance, const void* const* ins, int p, int self,
                            const void* selfIn, int dtype, size_t count, float scale, void* out,
                            void* decoded, void* ws, cudaStream_t stream);
} cocclCodecDeviceOps_v1_t;

typedef struct cocclCodecPlugin_v1 {
  uint32_t structSize; /* sizeof(cocclCodecPlugin_v1_t) */
  uint32_t abiVersion; /* COCCL_CODEC_ABI_V1 */
  /* 1..31 characters of [a-z0-9_], unique among the registered codecs; the spec name. */
  const char* name;
  /* Bumped whenever the payload bytes for some input change; every rank must agree. */
  uint32_t formatVersion;
  uint32_t dtypeMask;    /* COCCL_CODEC_DTYPE_BIT(cocclFloat32) | ... : inputs it encodes */
  uint32_t opMask;       /* COCCL_CODEC_OP_BIT(cocclSum) | ... : reductions it takes part in */
  uint32_t capabilities; /* COCCL_CODEC_CAP_* */

  /* Spec parser. params is the part of the spec after "name:" ("" when none): key=value
   * pairs separated by ',', whitespace around keys and values already removed, no repeated
   * key. On success *instance is set (any pointer, NULL allowed) and 0 is returned; on a bad
   * or unknown key or value, a nonzero code and a one-line reason in err[0, errLen). */
  int (*create)(const char* params, void** instance, char* err, size_t errLen);
  void (*destroy)(void* instance);
  /* The canonical spec with every parameter ("name:key=value,..."), NUL-terminated into
   * buf[0, len); returns the length it needs (without the NUL), like snprintf. Two instances
   * with the same canonical spec produce the same bytes. */
  size_t (*canonicalSpec)(const void* instance, char* buf, size_t len);
  /* Elements per block: chunk boundaries are multiples of it (>= 1). */
  size_t (*blockElems)(const void* instance);
  /* Exact payload bytes of count elements of dtype (see "Sizes"). */
  size_t (*encodedBytes)(const void* instance, size_t count, int dtype);
  /* Workspace bytes of one operation on at most `count` elements of dtype with p inputs
   * (p = 1 for encode / decode); onDevice 0: host operations, 1: device operations. NULL
   * means none. */
  size_t (*workspaceBytes)(const void* instance, size_t count, int dtype, int p, int onDevice);
  /* Documented bound on |decode(encode(x))_i - x_i| for any element of a block whose finite
   * input has root-mean-square blockRms and largest magnitude blockAbsMax (one encode /
   * decode). coccl_perf's #wrong column and coccl_codec_check use it. 0 for lossless. */
  double (*errorBound)(const void* instance, double blockRms, double blockAbsMax);

  cocclCodecHostOps_v1_t host;
  cocclCodecDeviceOps_v1_t device;
} cocclCodecPlugin_v1_t;

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* COCCL_CODEC_H_ */
