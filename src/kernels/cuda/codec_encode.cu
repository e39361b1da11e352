// kernels::encode: the fused encode kernels (codec x block size x input type).
#include "kernels/cuda/codec_kernels.cuh"
#include "codecs/none/none_kernels.cuh"

namespace coccl {
namespace kernels {

void encode(const CodecDesc& d, const void* in, cocclDataType_t dt, size_t count, void* out,
            cudaStream_t stream) {
  constexpr const char* kWhat = "kernels::encode";
  detail::checkDesc(d, kWhat);
  detail::checkCodecType(d, dt, kWhat);
  if (count == 0) return;
  detail::checkPtr(in, "in", kWhat);
  detail::checkPtr(out, "out", kWhat);
  if (d.kind == CodecKind::None) {
    detail::noneCopy(in, out, count * detail::elemBytes(dt), stream, kWhat);
    return;
  }
  const detail::EncodeArgs a{d, in, count, static_cast<uint8_t*>(out)};
  const size_t nb = (count + static_cast<size_t>(d.block) - 1) / static_cast<size_t>(d.block);
  detail::dispatchFamily(d, [&](auto fam) {
    detail::dispatchG(d.block, [&](auto g) {
      detail::dispatchTag(dt, [&](auto tag) {
        using Fam = decltype(fam);
        constexpr int G = decltype(g)::value;
        using Tag = decltype(tag);
        detail::launch<detail::encodeKernel<Fam, G, Tag>, detail::kStagedThreads>(
            a, detail::warpsFor<G, Tag>(nb), stream, kWhat, detail::encodeSmemBytes<G, Tag>());
      });
    });
  });
}

}  // namespace kernels
}  // namespace coccl
