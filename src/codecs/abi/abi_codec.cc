// AbiCodec (abi_codec.h) and the Codec interface's default device operations.
#include "codecs/abi/abi_codec.h"

#include <cstring>
#include <vector>

#include "codecs/dtype_io.h"
#include "core/dtype.h"
#include "core/error.h"

namespace coccl {

void Codec::deviceEncode(const void*, cocclDataType_t, size_t, void*, void*, cudaStream_t) const {
  COCCL_THROW(cocclInvalidUsage, "codec %s has no device launchers", name());
}
void Codec::deviceDecode(const void*, size_t, cocclDataType_t, void*, void*, cudaStream_t) const {
  COCCL_THROW(cocclInvalidUsage, "codec %s has no device launchers", name());
}
void Codec::deviceDecodeAccumulate(const void* const*, int, size_t, cocclDataType_t, float*, void*,
                                   cudaStream_t) const {
  COCCL_THROW(cocclInvalidUsage, "codec %s has no device launchers", name());
}
void Codec::deviceDecodeReduceEncode(const void* const*, int, int, const void*, cocclDataType_t,
                                     size_t, float, void*, void*, void*, cudaStream_t) const {
  COCCL_THROW(cocclInvalidUsage, "codec %s has no device launchers", name());
}

std::string& codecAbiThreadMessage() {
  thread_local std::string msg;
  return msg;
}

namespace {

uint32_t nameId(const char* name) {  // FNV-1a of the name, high bit set: never a built-in id
  uint32_t h = 2166136261u;
  for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return h | 0x80000000u;
}

int dti(cocclDataType_t dt) { return static_cast<int>(dt); }

}  // namespace

AbiCodec::AbiCodec(const cocclCodecPlugin_v1_t* desc, void* instance,
                   std::shared_ptr<void> keepAlive, CodecPtr builtin)
    : desc_(desc), inst_(instance), keepAlive_(std::move(keepAlive)), builtin_(std::move(builtin)) {
  id_ = builtin_ ? builtin_->id() : nameId(desc_->name);
  block_ = desc_->blockElems(inst_);
  char buf[256];
  const size_t need = desc_->canonicalSpec(inst_, buf, sizeof(buf));
  if (need < sizeof(buf)) {
    spec_.assign(buf, need);
  } else {
    std::vector<char> big(need + 1);
    desc_->canonicalSpec(inst_, big.data(), big.size());
    spec_.assign(big.data(), need);
  }
  if (block_ == 0) {
    if (desc_->destroy) desc_->destroy(inst_);
    COCCL_THROW(cocclInvalidArgument, "codec %s: blockElems() is 0", desc_->name);
  }
}

AbiCodec::~AbiCodec() {
  if (desc_->destroy) desc_->destroy(inst_);
}

bool AbiCodec::supportsType(cocclDataType_t dt) const {
  return dt >= 0 && dt < cocclNumTypes && (desc_->dtypeMask & COCCL_CODEC_DTYPE_BIT(dt)) != 0;
}

bool AbiCodec::supportsOp(cocclRedOp_t op) const {
  return op >= 0 && op < cocclNumOps && (desc_->opMask & COCCL_CODEC_OP_BIT(op)) != 0;
}

void AbiCodec::check(int rc, const char* op) const {
  if (rc == COCCL_CODEC_OK) return;
  std::string& m = codecAbiThreadMessage();
  const std::string detail = m;
  m.clear();
  const cocclResult_t code = rc == COCCL_CODEC_E_INVALID ? cocclInvalidArgument
                             : rc == COCCL_CODEC_E_CUDA  ? cocclUnhandledCudaError
                                                         : cocclInternalError;
  if (builtin_ && !detail.empty()) throw Error(code, detail);  // a built-in's own message
  const char* what = rc == COCCL_CODEC_E_INVALID       ? "COCCL_CODEC_E_INVALID"
                     : rc == COCCL_CODEC_E_UNSUPPORTED ? "COCCL_CODEC_E_UNSUPPORTED"
                     : rc == COCCL_CODEC_E_CUDA        ? "COCCL_CODEC_E_CUDA"
                     : rc == COCCL_CODEC_E_INTERNAL    ? "COCCL_CODEC_E_INTERNAL"
                                                       : "an unknown code";
  COCCL_THROW(code, "codec %s (plug-in): %s returned %d (%s): the plug-in failed%s%s",
              desc_->name, op, rc, what, detail.empty() ? "" : ": ", detail.c_str());
}

size_t AbiCodec::encodedBytes(size_t count, cocclDataType_t dt) const {
  COCCL_CHECK_ARG(supportsType(dt), "%s: encodedBytes: unsupported data type %s", desc_->name,
                  dtypeName(dt));
  return desc_->encodedBytes(inst_, count, dti(dt));
}

void* AbiCodec::hostWorkspace(size_t count, cocclDataType_t dt, int p) const {
  if (!desc_->workspaceBytes) return nullptr;
  const size_t n = desc_->workspaceBytes(inst_, count, dti(dt), p, 0);
  if (n == 0) return nullptr;
  thread_local std::vector<char> ws;  // grows to the largest size asked on this thread
  if (ws.size() < n + 256) ws.resize(n + 256);
  const uintptr_t a = reinterpret_cast<uintptr_t>(ws.data());
  return ws.data() + ((256 - (a & 255)) & 255);
}

void AbiCodec::encode(const void* in, cocclDataType_t dt, size_t count, void* out) const {
  if (count == 0) return;
  check(desc_->host.encode(inst_, in, dti(dt), count, out, hostWorkspace(count, dt, 1)), "encode");
}

void AbiCodec::decode(const void* in, size_t count, cocclDataType_t dt, void* out) const {
  if (count == 0) return;
  check(desc_->host.decode(inst_, in, count, dti(dt), out, hostWorkspace(count, dt, 1)), "decode");
}

void AbiCodec::decodeAccumulate(const void* in, size_t count, cocclDataType_t dt,
                                float* acc) const {
  if (count == 0) return;
  const void* ins[1] = {in};
  check(desc_->host.decodeAccumulate(inst_, ins, 1, count, dti(dt), acc,
                                     hostWorkspace(count, dt, 1)),
        "decodeAccumulate");
}

void AbiCodec::decodeAccumulateMany(const void* const* ins, int n, size_t count,
                                    cocclDataType_t dt, float* acc) const {
  COCCL_CHECK_ARG(n >= 1 && n <= 64, "%s: decodeAccumulate of %d payloads (1..64)", desc_->name,
                  n);
  if (count == 0) return;
  check(desc_->host.decodeAccumulate(inst_, ins, n, count, dti(dt), acc,
                                     hostWorkspace(count, dt, n)),
        "decodeAccumulate");
}

void AbiCodec::decodeReduceEncode(const void* const* ins, int p, int self, const void* selfIn,
                                  cocclDataType_t dt, size_t count, float scale, void* out,
                                  float* scratch, void* decoded) const {
  COCCL_CHECK_ARG(p >= 1 && self >= 0 && self < p, "%s: decodeReduceEncode with p=%d self=%d",
                  desc_->name, p, self);
  if (count == 0) return;
  if (desc_->host.decodeReduceEncode) {
    // The caller's scratch (count floats) serves as the workspace when it is large and aligned
    // enough; else the thread's buffer.
    const size_t need = desc_->workspaceBytes ? desc_->workspaceBytes(inst_, count, dti(dt), p, 0) : 0;
    void* ws = nullptr;
    if (need)
      ws = scratch && need <= count * sizeof(float) && reinterpret_cast<uintptr_t>(scratch) % 256 == 0
               ? static_cast<void*>(scratch)
               : hostWorkspace(count, dt, p);
    check(desc_->host.decodeReduceEncode(inst_, ins, p, self, selfIn, dti(dt), count, scale, out,
                                         decoded, ws),
          "decodeReduceEncode");
    return;
  }
  // Composed (include/coccl_codec.h): the fp32 sum in rank order, scaled, then encoded as fp32
  // input where the payload does not depend on the input type, else rounded to dt first.
  COCCL_CHECK_ARG(codec_detail::isCodecFloatType(dt),
                  "%s: decodeReduceEncode: unsupported data type %s (fp32, fp16, bf16)",
                  desc_->name, dtypeName(dt));
  COCCL_CHECK_ARG(scratch != nullptr && selfIn != nullptr && out != nullptr,
                  "%s: decodeReduceEncode: null buffer", desc_->name);
  const bool fromFp32 = supportsType(cocclFloat32) &&
                        encodedBytes(count, cocclFloat32) == encodedBytes(count, dt);
  for (size_t i = 0; i < count; ++i) scratch[i] = -0.0f;  // the identity: the first term exact
  codec_detail::dispatchFloatType(dt, [&](auto tag) {
    using IO = codec_detail::FloatIO<decltype(tag)::value>;
    using T = typename IO::T;
    for (int r = 0; r < p; ++r) {
      if (r == self) {
        const T* x = static_cast<const T*>(selfIn);
        for (size_t i = 0; i < count; ++i) scratch[i] += IO::toF(x[i]);
      } else {
        COCCL_CHECK_ARG(ins && ins[r], "%s: decodeReduceEncode: ins[%d] is null", desc_->name, r);
        decodeAccumulate(ins[r], count, dt, scratch);
      }
    }
    if (scale != 1.0f)
      for (size_t i = 0; i < count; ++i) scratch[i] *= scale;
    if (fromFp32) {
      encode(scratch, cocclFloat32, count, out);
      return;
    }
    thread_local std::vector<T> rounded;  // grows to the largest count on this thread
    if (rounded.size() < count) rounded.resize(count);
    for (size_t i = 0; i < count; ++i) rounded[i] = IO::fromF(scratch[i]);
    encode(rounded.data(), dt, count, out);
  });
  if (decoded) decode(out, count, dt, decoded);
}

double AbiCodec::elementErrorBound(double blockRms, double blockAbsMax) const {
  return desc_->errorBound ? desc_->errorBound(inst_, blockRms, blockAbsMax) : 0.0;
}

void AbiCodec::requireDevice(const char* op) const {
  if (!hasDeviceOps())
    COCCL_THROW(cocclInvalidUsage, "codec %s has no device launchers (%s on device buffers)",
                desc_->name, op);
}

size_t AbiCodec::deviceWorkspaceBytes(size_t count, cocclDataType_t dt, int p) const {
  return desc_->workspaceBytes ? desc_->workspaceBytes(inst_, count, dti(dt), p, 1) : 0;
}

void AbiCodec::deviceEncode(const void* in, cocclDataType_t dt, size_t count, void* out, void* ws,
                            cudaStream_t stream) const {
  requireDevice("encode");
  if (count == 0) return;
  check(desc_->device.encode(inst_, in, dti(dt), count, out, ws, stream), "device encode");
}

void AbiCodec::deviceDecode(const void* in, size_t count, cocclDataType_t dt, void* out, void* ws,
                            cudaStream_t stream) const {
  requireDevice("decode");
  if (count == 0) return;
  check(desc_->device.decode(inst_, in, count, dti(dt), out, ws, stream), "device decode");
}

void AbiCodec::deviceDecodeAccumulate(const void* const* ins, int n, size_t count,
                                      cocclDataType_t dt, float* acc, void* ws,
                                      cudaStream_t stream) const {
  requireDevice("decodeAccumulate");
  if (count == 0 || n == 0) return;
  check(desc_->device.decodeAccumulate(inst_, ins, n, count, dti(dt), acc, ws, stream),
        "device decodeAccumulate");
}

void AbiCodec::deviceDecodeReduceEncode(const void* const* ins, int p, int self,
                                        const void* selfIn, cocclDataType_t dt, size_t count,
                                        float scale, void* out, void* decoded, void* ws,
                                        cudaStream_t stream) const {
  requireDevice("decodeReduceEncode");
  if (count == 0) return;
  check(desc_->device.decodeReduceEncode(inst_, ins, p, self, selfIn, dti(dt), count, scale, out,
                                         decoded, ws, stream),
        "device decodeReduceEncode");
}

}  // namespace coccl
