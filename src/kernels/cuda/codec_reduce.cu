// kernels::decodeReduceEncode: the fused two-shot owner step (codec x block size x type).
#include "kernels/cuda/codec_kernels.cuh"
#include "codecs/none/none_kernels.cuh"

namespace coccl {
namespace kernels {

void decodeReduceEncode(const CodecDesc& d, const void* const* ins, int p, int self,
                        const void* selfIn, cocclDataType_t dt, size_t count, float scale,
                        void* out, void* decoded, cudaStream_t stream) {
  constexpr const char* kWhat = "kernels::decodeReduceEncode";
  detail::checkDesc(d, kWhat);
  detail::checkCodecType(d, dt, kWhat);
  detail::checkInputCount(p, self, kWhat);
  if (count == 0) return;  // a no-op before any pointer is looked at
  detail::checkInputs(ins, p, self, kWhat);
  if (self >= 0) detail::checkPtr(selfIn, "selfIn", kWhat);
  detail::checkPtr(out, "out", kWhat);
  if (d.kind == CodecKind::None) {
    detail::noneReduce(ins, p, self, selfIn, dt, count, scale, false, out, decoded, stream, kWhat);
    return;
  }
  detail::ReduceArgs a{};
  a.d = d;
  for (int r = 0; r < p; ++r) a.ins[r] = r == self ? nullptr : static_cast<const uint8_t*>(ins[r]);
  a.p = p;
  a.self = self;
  a.selfIn = self >= 0 ? selfIn : nullptr;
  a.n = count;
  a.scale = scale;
  a.out = static_cast<uint8_t*>(out);
  a.userOut = decoded;
  const size_t nb = (count + static_cast<size_t>(d.block) - 1) / static_cast<size_t>(d.block);
  detail::dispatchFamily(d, [&](auto fam) {
    detail::dispatchG(d.block, [&](auto g) {
      detail::dispatchTag(dt, [&](auto tag) {
        using Fam = decltype(fam);
        constexpr int G = decltype(g)::value;
        using Tag = decltype(tag);
        constexpr int kSmem = detail::reduceSmemBytes<G, Tag>();
        a.staged = COCCL_KERNELS_REDUCE_STAGED && detail::smemFits(kSmem, detail::kReduceMinCtas);
        detail::launch<detail::reduceKernel<Fam, G, Tag>>(
            a, detail::warpsFor<G, Tag, COCCL_REDUCE_TILE_ELEMS>(nb), stream, kWhat,
            a.staged ? kSmem : 0);
      });
    });
  });
}

}  // namespace kernels
}  // namespace coccl
