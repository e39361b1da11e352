// BlockCodec<K>: the Codec interface for a blocked codec (payload layout in block_driver.h),
// given a host block kernel K. Sizes are the codec's PayloadGeometry (codecGeometry(K::kKind, G),
// kernels/payload_geometry.h). K additionally provides
//   static constexpr const char* kName; static constexpr uint32_t kId, kFormatVersion;
//   double errorBound(size_t G, double blockRms, double blockAbsMax) const;
//   CodecDesc desc(size_t G) const;
#pragma once

#include <limits>
#include <string>
#include <utility>

#include "codecs/block_driver.h"
#include "codecs/codec.h"
#include "core/error.h"

namespace coccl {
namespace codec_detail {

template <class K>
class BlockCodec final : public Codec {
 public:
  BlockCodec(K kernel, size_t block, std::string spec)
      : k_(std::move(kernel)),
        g_(block),
        geo_(codecGeometry(K::kKind, static_cast<int32_t>(block))),
        spec_(std::move(spec)) {}

  const char* name() const override { return K::kName; }
  const std::string& spec() const override { return spec_; }
  uint32_t id() const override { return K::kId; }
  uint32_t formatVersion() const override { return K::kFormatVersion; }
  bool supportsType(cocclDataType_t dt) const override { return isCodecFloatType(dt); }
  bool supportsOp(cocclRedOp_t op) const override { return op == cocclSum || op == cocclAvg; }
  bool lossless() const override { return false; }
  size_t blockElems() const override { return g_; }

  size_t encodedBytes(size_t count, cocclDataType_t dt) const override {
    checkType(dt, "encodedBytes");
    COCCL_CHECK_ARG(count <= std::numeric_limits<size_t>::max() / 8, "%s: count %zu too large",
                    K::kName, count);
    return static_cast<size_t>(geo_.payloadBytes(count));
  }

  void encode(const void* in, cocclDataType_t dt, size_t count, void* out) const override {
    checkType(dt, "encode");
    if (count == 0) return;
    checkPtrs(in, out, "encode");
    auto* payload = static_cast<uint8_t*>(out);
    const size_t nb = static_cast<size_t>(geo_.blocks(count));
    dispatchBlock(g_, [&](auto gt) {
      constexpr int G = decltype(gt)::value;
      dispatchFloatType(dt, [&](auto dtt) {
        constexpr cocclDataType_t DT = decltype(dtt)::value;
        encodeBlocks<G, DT>(k_, static_cast<const typename FloatIO<DT>::T*>(in), count, 0, nb,
                            payload);
      });
    });
  }

  void decode(const void* in, size_t count, cocclDataType_t dt, void* out) const override {
    checkType(dt, "decode");
    if (count == 0) return;
    checkPtrs(in, out, "decode");
    dispatchBlock(g_, [&](auto gt) {
      constexpr int G = decltype(gt)::value;
      dispatchFloatType(dt, [&](auto dtt) {
        constexpr cocclDataType_t DT = decltype(dtt)::value;
        decodeBlocks<G>(k_, static_cast<const uint8_t*>(in), count,
                        StoreSink<DT>{static_cast<typename FloatIO<DT>::T*>(out)});
      });
    });
  }

  void decodeAccumulate(const void* in, size_t count, cocclDataType_t dt,
                        float* acc) const override {
    checkType(dt, "decodeAccumulate");
    if (count == 0) return;
    checkPtrs(in, acc, "decodeAccumulate");
    dispatchBlock(g_, [&](auto gt) {
      constexpr int G = decltype(gt)::value;
      decodeBlocks<G>(k_, static_cast<const uint8_t*>(in), count, AccumulateSink{acc});
    });
  }

  // Fused per block; `scratch` is not needed (see decodeReduceEncodeBlocks).
  void decodeReduceEncode(const void* const* ins, int p, int self, const void* selfIn,
                          cocclDataType_t dt, size_t count, float scale, void* out, float* scratch,
                          void* decoded) const override {
    checkType(dt, "decodeReduceEncode");
    COCCL_CHECK_ARG(p >= 1 && self >= 0 && self < p, "%s: decodeReduceEncode with p=%d self=%d",
                    K::kName, p, self);
    if (count == 0) return;
    checkPtrs(selfIn, out, "decodeReduceEncode");
    COCCL_CHECK_ARG(p == 1 || ins != nullptr, "%s: decodeReduceEncode: ins is null", K::kName);
    for (int r = 0; r < p; ++r)
      COCCL_CHECK_ARG(r == self || ins[r] != nullptr, "%s: decodeReduceEncode: ins[%d] is null",
                      K::kName, r);
    dispatchBlock(g_, [&](auto gt) {
      constexpr int G = decltype(gt)::value;
      dispatchFloatType(dt, [&](auto dtt) {
        constexpr cocclDataType_t DT = decltype(dtt)::value;
        using T = typename FloatIO<DT>::T;
        decodeReduceEncodeBlocks<G, DT>(k_, ins, p, self, static_cast<const T*>(selfIn), count,
                                        scale, static_cast<uint8_t*>(out),
                                        static_cast<T*>(decoded));
      });
    });
  }

  double elementErrorBound(double blockRms, double blockAbsMax) const override {
    return k_.errorBound(g_, blockRms, blockAbsMax);
  }

  CodecDesc deviceDesc() const override { return k_.desc(g_); }

 private:
  void checkType(cocclDataType_t dt, const char* what) const {
    COCCL_CHECK_ARG(isCodecFloatType(dt), "%s: %s: unsupported data type %s (fp32, fp16, bf16)",
                    K::kName, what, dtypeName(dt));
  }
  static void checkPtrs(const void* a, const void* b, const char* what) {
    COCCL_CHECK_ARG(a != nullptr && b != nullptr, "%s: %s: null buffer", K::kName, what);
  }

  K k_;
  size_t g_;
  PayloadGeometry geo_;
  std::string spec_;
};

}  // namespace codec_detail
}  // namespace coccl
