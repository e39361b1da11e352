// The "none" codec: the payload is the raw bytes of the input (count * element size), block 1,
// lossless, every data type. decodeAccumulate converts floating-point types to fp32 (fp64 is
// rounded to nearest, fp16/bf16/fp8 exactly); decodeReduceEncode takes fp32, fp16 and bf16
// (accumulates in fp32 in rank order and writes the result rounded to nearest-even in dt).
#include <algorithm>
#include <cstring>

#include "codecs/codec_factories.h"
#include "codecs/dtype_io.h"
#include "core/error.h"
#include "kernels/fp8.h"

namespace coccl {
namespace codec_detail {

namespace {

// Converts n elements of a floating-point dt to fp32 and hands them to fn(i, value).
template <class Fn>
void forEachAsFloat(const void* in, cocclDataType_t dt, size_t n, Fn&& fn) {
  switch (dt) {
    case cocclFloat32: {
      auto* p = static_cast<const float*>(in);
      for (size_t i = 0; i < n; ++i) fn(i, p[i]);
      break;
    }
    case cocclFloat16: {
      auto* p = static_cast<const uint16_t*>(in);
      for (size_t i = 0; i < n; ++i) fn(i, kmath::fp16ToFloat(p[i]));
      break;
    }
    case cocclBfloat16: {
      auto* p = static_cast<const uint16_t*>(in);
      for (size_t i = 0; i < n; ++i) fn(i, kmath::bf16ToFloat(p[i]));
      break;
    }
    case cocclFloat64: {
      auto* p = static_cast<const double*>(in);
      for (size_t i = 0; i < n; ++i) fn(i, static_cast<float>(p[i]));
      break;
    }
    case cocclFloat8e4m3: {
      auto* p = static_cast<const uint8_t*>(in);
      for (size_t i = 0; i < n; ++i) fn(i, kmath::fp8ToFloat<kmath::Fp8E4M3>(p[i]));
      break;
    }
    case cocclFloat8e5m2: {
      auto* p = static_cast<const uint8_t*>(in);
      for (size_t i = 0; i < n; ++i) fn(i, kmath::fp8ToFloat<kmath::Fp8E5M2>(p[i]));
      break;
    }
    default:
      COCCL_THROW(cocclInvalidArgument, "none: data type %s has no fp32 conversion", dtypeName(dt));
  }
}

class NoneCodec final : public Codec {
 public:
  const char* name() const override { return "none"; }
  const std::string& spec() const override { return spec_; }
  uint32_t id() const override { return kCodecIdNone; }
  uint32_t formatVersion() const override { return 1; }
  bool supportsType(cocclDataType_t dt) const override { return dtypeSize(dt) != 0; }
  bool supportsOp(cocclRedOp_t op) const override { return op == cocclSum || op == cocclAvg; }
  bool lossless() const override { return true; }
  size_t blockElems() const override { return 1; }

  size_t encodedBytes(size_t count, cocclDataType_t dt) const override {
    return static_cast<size_t>(
        codecGeometry(CodecKind::None, 1, static_cast<int32_t>(elemSize(dt))).payloadBytes(count));
  }

  void encode(const void* in, cocclDataType_t dt, size_t count, void* out) const override {
    copy(in, dt, count, out, "encode");
  }

  void decode(const void* in, size_t count, cocclDataType_t dt, void* out) const override {
    copy(in, dt, count, out, "decode");
  }

  void decodeAccumulate(const void* in, size_t count, cocclDataType_t dt,
                        float* acc) const override {
    COCCL_CHECK_ARG(isFloatingType(dt),
                    "none: decodeAccumulate needs a floating-point type, got %s", dtypeName(dt));
    if (count == 0) return;
    COCCL_CHECK_ARG(in != nullptr && acc != nullptr, "none: decodeAccumulate: null buffer");
    forEachAsFloat(in, dt, count, [acc](size_t i, float v) { acc[i] = acc[i] + v; });
  }

  void decodeReduceEncode(const void* const* ins, int p, int self, const void* selfIn,
                          cocclDataType_t dt, size_t count, float scale, void* out, float* scratch,
                          void* decoded) const override {
    COCCL_CHECK_ARG(isCodecFloatType(dt), "none: decodeReduceEncode: unsupported data type %s",
                    dtypeName(dt));
    COCCL_CHECK_ARG(p >= 1 && self >= 0 && self < p, "none: decodeReduceEncode with p=%d self=%d",
                    p, self);
    if (count == 0) return;
    COCCL_CHECK_ARG(selfIn != nullptr && out != nullptr, "none: decodeReduceEncode: null buffer");
    for (int r = 0; r < p; ++r)
      COCCL_CHECK_ARG(r == self || (ins != nullptr && ins[r] != nullptr),
                      "none: decodeReduceEncode: ins[%d] is null", r);
    dispatchFloatType(dt, [&](auto dtt) {
      constexpr cocclDataType_t DT = decltype(dtt)::value;
      using T = typename FloatIO<DT>::T;
      constexpr size_t kSlab = 1024;
      float acc[kSlab];
      for (size_t base = 0; base < count; base += kSlab) {
        const size_t n = std::min(kSlab, count - base);
        for (int r = 0; r < p; ++r) {
          const T* src = static_cast<const T*>(r == self ? selfIn : ins[r]) + base;
          if (r == 0) {
            for (size_t i = 0; i < n; ++i) acc[i] = FloatIO<DT>::toF(src[i]);
          } else {
            for (size_t i = 0; i < n; ++i) acc[i] = acc[i] + FloatIO<DT>::toF(src[i]);
          }
        }
        if (scale != 1.0f)
          for (size_t i = 0; i < n; ++i) acc[i] = acc[i] * scale;
        T* o = static_cast<T*>(out) + base;
        for (size_t i = 0; i < n; ++i) o[i] = FloatIO<DT>::fromF(acc[i]);
        if (decoded != nullptr) std::memmove(static_cast<T*>(decoded) + base, o, n * sizeof(T));
      }
    });
  }

  double elementErrorBound(double, double) const override { return 0.0; }

 private:
  static size_t elemSize(cocclDataType_t dt) {
    size_t s = dtypeSize(dt);
    COCCL_CHECK_ARG(s != 0, "none: unknown data type %d", static_cast<int>(dt));
    return s;
  }
  static void copy(const void* in, cocclDataType_t dt, size_t count, void* out, const char* what) {
    size_t bytes = count * elemSize(dt);
    if (bytes == 0) return;
    COCCL_CHECK_ARG(in != nullptr && out != nullptr, "none: %s: null buffer", what);
    if (in != out) std::memmove(out, in, bytes);
  }

  std::string spec_ = "none";
};

}  // namespace

CodecPtr makeNoneCodec(const ParsedSpec& spec) {
  SpecReader reader(spec);
  reader.finish("");
  return std::make_shared<NoneCodec>();
}

}  // namespace codec_detail
}  // namespace coccl
