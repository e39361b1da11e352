// The built-in codecs' descriptors (builtin.h): one per line of the codec list, each function
// forwarding to the C++ codec that the codec's factory builds from the spec.
#include <cstdio>
#include <cstring>
#include <string>

#include "codecs/abi/builtin.h"
#include "codecs/codec_factories.h"
#include "codecs/spec.h"

namespace coccl {
namespace codec_detail {
namespace {

const Codec& inner(const void* instance) { return *static_cast<const BuiltinInstance*>(instance)->codec; }
cocclDataType_t dtOf(int dtype) { return static_cast<cocclDataType_t>(dtype); }

template <CodecPtr (*Make)(const ParsedSpec&), const char* Name>
int create(const char* params, void** instance, char* err, size_t errLen) {
  std::string spec = Name;
  if (params && *params) spec += std::string(":") + params;
  const int rc = guarded([&] {
    *instance = new BuiltinInstance{Make(parseSpec(spec))};
  });
  if (rc != COCCL_CODEC_OK && err && errLen) {
    std::snprintf(err, errLen, "%s", codecAbiThreadMessage().c_str());
    codecAbiThreadMessage().clear();
  }
  return rc;
}

void destroy(void* instance) { delete static_cast<BuiltinInstance*>(instance); }

size_t canonicalSpec(const void* instance, char* buf, size_t len) {
  const std::string& s = inner(instance).spec();
  if (buf && len) std::snprintf(buf, len, "%s", s.c_str());
  return s.size();
}

size_t blockElems(const void* instance) { return inner(instance).blockElems(); }

size_t encodedBytes(const void* instance, size_t count, int dtype) {
  size_t n = 0;
  if (guarded([&] { n = inner(instance).encodedBytes(count, dtOf(dtype)); }) != COCCL_CODEC_OK)
    return 0;
  return n;
}

double errorBound(const void* instance, double rms, double absmax) {
  return inner(instance).elementErrorBound(rms, absmax);
}

int encode(const void* instance, const void* in, int dtype, size_t count, void* out, void*) {
  return guarded([&] { inner(instance).encode(in, dtOf(dtype), count, out); });
}

int decode(const void* instance, const void* in, size_t count, int dtype, void* out, void*) {
  return guarded([&] { inner(instance).decode(in, count, dtOf(dtype), out); });
}

int decodeAccumulate(const void* instance, const void* const* ins, int n, size_t count, int dtype,
                     float* acc, void*) {
  return guarded([&] {
    for (int i = 0; i < n; ++i) inner(instance).decodeAccumulate(ins[i], count, dtOf(dtype), acc);
  });
}

// The built-ins need no scratch in decodeReduceEncode (fused per block): ws is unused.
int decodeReduceEncode(const void* instance, const void* const* ins, int p, int self,
                       const void* selfIn, int dtype, size_t count, float scale, void* out,
                       void* decoded, void* ws) {
  return guarded([&] {
    inner(instance).decodeReduceEncode(ins, p, self, selfIn, dtOf(dtype), count, scale, out,
                                       static_cast<float*>(ws), decoded);
  });
}

// The none codec composes decodeReduceEncode with a count-float scratch (workspace); the
// blocked codecs need none.
size_t workspaceBytes(const void* instance, size_t count, int, int, int onDevice) {
  return !onDevice && inner(instance).lossless() ? count * sizeof(float) : 0;
}

constexpr uint32_t kFloatTypes = COCCL_CODEC_DTYPE_BIT(cocclFloat32) |
                                 COCCL_CODEC_DTYPE_BIT(cocclFloat16) |
                                 COCCL_CODEC_DTYPE_BIT(cocclBfloat16);
constexpr uint32_t kAllTypes = (1u << cocclNumTypes) - 1;
constexpr uint32_t kSumAvg = COCCL_CODEC_OP_BIT(cocclSum) | COCCL_CODEC_OP_BIT(cocclAvg);

#define COCCL_BUILTIN_NAME_(Kind, name, id, bits, meta, align) constexpr char kName##Kind[] = #name;
COCCL_CODEC_LIST(COCCL_BUILTIN_NAME_)
#undef COCCL_BUILTIN_NAME_

cocclCodecPlugin_v1_t describe(const char* name, CodecPtr (*make)(const ParsedSpec&),
                               int (*createFn)(const char*, void**, char*, size_t)) {
  CodecPtr probe = make(parseSpec(name));  // the defaults: what the codec takes and does
  const bool none = probe->lossless();
  cocclCodecPlugin_v1_t d{};
  d.structSize = sizeof(cocclCodecPlugin_v1_t);
  d.abiVersion = COCCL_CODEC_ABI_V1;
  d.name = name;
  d.formatVersion = probe->formatVersion();
  d.dtypeMask = none ? kAllTypes : kFloatTypes;
  d.opMask = kSumAvg;
  // Non-finite input: the blocked codecs carry such blocks raw (RAW mode); none copies bytes.
  d.capabilities = COCCL_CODEC_CAP_NONFINITE | COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE |
                   COCCL_CODEC_CAP_DETERMINISTIC | (none ? COCCL_CODEC_CAP_LOSSLESS : 0u) |
                   (builtinDeviceOpsBuilt() ? COCCL_CODEC_CAP_DEVICE : 0u);
  // fp8_ash_ds's owner step sums in the rotated domain (src/codecs/fp8_ash_ds/ash_block.h),
  // int8's (rotate=1, auto) sums its rotated payloads before one transform (int8_block.h)
  if (std::string(name) == "fp8_ash_ds" || std::string(name) == "int8")
    d.capabilities |= COCCL_CODEC_CAP_OWN_SUM_ORDER;
  d.create = createFn;
  d.destroy = destroy;
  d.canonicalSpec = canonicalSpec;
  d.blockElems = blockElems;
  d.encodedBytes = encodedBytes;
  d.workspaceBytes = workspaceBytes;
  d.errorBound = errorBound;
  d.host = {encode, decode, decodeAccumulate, decodeReduceEncode};
  if (builtinDeviceOpsBuilt()) d.device = builtinDeviceOps();
  return d;
}

}  // namespace

const std::vector<const cocclCodecPlugin_v1_t*>& builtinDescriptors() {
  static const std::vector<const cocclCodecPlugin_v1_t*> kAll = [] {
    std::vector<const cocclCodecPlugin_v1_t*> v;
#define COCCL_BUILTIN_DESC_(Kind, name, id, bits, meta, align)                          \
  {                                                                                    \
    static const cocclCodecPlugin_v1_t d =                                             \
        describe(kName##Kind, make##Kind##Codec, create<make##Kind##Codec, kName##Kind>); \
    v.push_back(&d);                                                                   \
  }
    COCCL_CODEC_LIST(COCCL_BUILTIN_DESC_)
#undef COCCL_BUILTIN_DESC_
    return v;
  }();
  return kAll;
}

CodecPtr builtinCodec(const cocclCodecPlugin_v1_t* desc, const void* instance) {
  for (const cocclCodecPlugin_v1_t* d : builtinDescriptors())
    if (d == desc) return static_cast<const BuiltinInstance*>(instance)->codec;
  return nullptr;
}

}  // namespace codec_detail
}  // namespace coccl
